// The egress proxy of local MCP servers putting the integration's credential (delivery.http) on a
// server's requests, without docker: the proxy runs in a process of its own that trusts the fake
// vendor's certificate as an operator makes a sidecar trust one (SANDBOX_EGRESS_CA_FILE). Plain
// HTTP gets the header on the forwarded request; HTTPS is terminated with the run's certificate
// authority (which the "server" here trusts, as its runtime would) and re-originated to the vendor,
// whose certificate is verified; a 401 refreshes an OAuth credential through the platform once; the
// credential never comes back to the server; other hosts, loopback, private addresses and the
// platform's ports stay refused. Also the run authority itself (run-ca.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { createInterface } from 'node:readline';
import tls from 'node:tls';
import type { IntegrationAssignment } from '../../lib/afps/integration-assignment.ts';
import { createRunCa } from '../../sidecar/run-ca.ts';
import { CREDENTIAL_REFRESH_HEADER } from '../../sidecar/local-egress-proxy.ts';
import { aSelfSignedCert } from '../support/self-signed.ts';
import type { ChildConfig } from '../support/credential-proxy-child.ts';

const SECRET = 's'.repeat(43);
const OAUTH_SECRET = 'o'.repeat(43);
const PLAIN_SECRET = 'p'.repeat(43);
const TOKEN = 'tok_live_4f9a7c2e1b8d6a3f';
const FRESH = 'tok_fresh_9c1d2e3f4a5b6c7d';
const EXPIRED = 'tok_expired_1a2b3c4d5e6f7a8b';
const VENDOR = 'vendor.test';

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

const basic = (secret: string) => `Basic ${Buffer.from(`mcp:${secret}`).toString('base64')}`;

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => (body += c));
    res.on('end', () => resolve(body));
    res.on('error', reject);
  });
}

/** a request in absolute form through the proxy, as a server's HTTP client makes one */
function viaProxy(proxyPort: number, url: string, secret: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, path: url, headers: { host: new URL(url).host, 'proxy-authorization': basic(secret), ...headers } }, (res) => {
      void readAll(res).then((body) => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** CONNECT through the proxy: its status, the socket when it opened, the refusal's body otherwise */
function connect(proxyPort: number, authority: string, secret: string): Promise<{ status: number; body: string; socket?: Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, method: 'CONNECT', path: authority, headers: { 'proxy-authorization': basic(secret) } });
    req.on('connect', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      if (res.statusCode === 200) return resolve({ status: 200, body: '', socket });
      let body = head.toString('utf8');
      socket.on('data', (c: Buffer) => (body += c));
      socket.on('close', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** HTTPS through a CONNECT tunnel, trusting `ca` only (the run's authority, as the server's runtime is told to) */
async function viaTunnel(proxyPort: number, host: string, port: number, path: string, secret: string, ca: string, headers: Record<string, string> = {}) {
  const tunnel = await connect(proxyPort, `${host}:${port}`, secret);
  if (tunnel.status !== 200) return { status: tunnel.status, body: tunnel.body, headers: {} as http.IncomingHttpHeaders, issuer: '' };
  const secure = tls.connect({ socket: tunnel.socket!, servername: host, ca });
  await new Promise<void>((resolve, reject) => {
    secure.once('secureConnect', () => resolve());
    secure.once('error', reject);
  });
  const issuer = secure.getPeerCertificate().issuer.O;
  try {
    return await new Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders; issuer: string }>((resolve, reject) => {
      const req = https.request({ host, port, path, headers, createConnection: () => secure }, (res) => {
        void readAll(res).then((body) => resolve({ status: res.statusCode!, body, headers: res.headers, issuer: String(issuer) }));
      });
      req.on('error', reject);
      req.end();
    });
  } finally {
    secure.destroy();
  }
}

/** an integration assignment as the worker writes it for a local server with delivery.http */
function anIntegration(packageId: string, authorizedUris: string[], credentials: Record<string, string>, oauth = false): IntegrationAssignment {
  return {
    packageId, toolPrefix: packageId.replace(/^@/, '').replace('/', '_'), tools: ['fetch'],
    source: { kind: 'local', command: ['node', 'server.cjs'] },
    authKey: 'main', authType: oauth ? 'oauth2' : 'api_key', connectionId: oauth ? 'conn_oauth' : 'conn_key',
    authorizedUris, delivery: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.access_token}' }, credentials,
  };
}

/**
 * A careless vendor: answers with the credential it received in a header, a cookie and the body (as
 * written, in JSON, base64 and percent-encoded), the body in two chunks that split the credential,
 * gzip-compressed when asked by ?gzip, whatever encoding the request accepted.
 */
function echoCredential(req: IncomingMessage, res: http.ServerResponse): void {
  const auth = req.headers.authorization ?? '';
  const token = auth.replace(/^Bearer /, '');
  const body = Buffer.from(`${JSON.stringify({ received: auth, accept: req.headers['accept-encoding'] ?? null })}\nraw ${token}\nb64 ${Buffer.from(token).toString('base64')}\npct ${encodeURIComponent(`${token}/x`)}\n`);
  const headers = { 'content-type': 'text/plain', 'x-echo': auth, 'set-cookie': [`session=${token}; Path=/`, 'theme=dark'] };
  if (req.url?.includes('gzip')) {
    res.writeHead(200, { ...headers, 'content-encoding': 'gzip' });
    return void res.end(gzipSync(body));
  }
  res.writeHead(200, headers);
  // split inside the raw token: the proxy must hold the first part back until it sees the rest
  const cut = body.indexOf(`raw ${token}`) + 4 + Math.floor(token.length / 2);
  res.write(body.subarray(0, cut));
  setTimeout(() => res.end(body.subarray(cut)), 50);
}

describe('the egress proxy of local servers puts the credential on their requests (delivery.http)', () => {
  /** what the vendor received: its authorization header as sent (this test's side holds the tokens anyway) */
  const seen: Array<{ tls: boolean; host?: string; path?: string; authorization?: string }> = [];
  const vendorHandler = (secure: boolean) => (req: IncomingMessage, res: http.ServerResponse) => {
    seen.push({ tls: secure, host: req.headers.host, path: req.url, authorization: req.headers.authorization });
    req.resume();
    const auth = req.headers.authorization;
    if (req.url?.startsWith('/api/echo') || req.url?.startsWith('/v1/echo')) return echoCredential(req, res);
    if (auth === `Bearer ${EXPIRED}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end('{"error":"token_expired"}');
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    // never the token itself: whether one came, and which
    res.end(JSON.stringify({ vendor: secure ? 'https' : 'http', path: req.url, credential: auth === `Bearer ${TOKEN}` ? 'live' : auth === `Bearer ${FRESH}` ? 'fresh' : auth ? 'other' : 'none' }));
  };
  const vendor = http.createServer(vendorHandler(false));
  const cert = aSelfSignedCert(VENDOR);
  const secureVendor = https.createServer({ key: cert.key, cert: cert.cert }, vendorHandler(true));
  // a vendor whose certificate no one trusts: re-originated TLS verifies the vendor
  const rogueCert = aSelfSignedCert(VENDOR);
  const rogueVendor = https.createServer({ key: rogueCert.key, cert: rogueCert.cert }, vendorHandler(true));
  const platform = http.createServer();
  let refreshAnswer: { status: number; body: unknown } = { status: 200, body: { credentials: { access_token: FRESH } } };
  const refreshes: string[] = [];
  let child: ChildProcess;
  let port: number;
  let securePort: number;
  let roguePort: number;
  let platformPort: number;
  let proxyPort: number;
  let runCa: string;
  const notes: string[] = [];
  /** whether a note like this arrives (the proxy's notes come on its stdout, apart from its answers) within a few seconds */
  const noted = async (like: string): Promise<boolean> => {
    for (const deadline = Date.now() + 5_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
      if (notes.some((n) => n.includes(like))) return true;
    }
    return notes.some((n) => n.includes(like));
  };

  before(async () => {
    platform.on('request', (req: IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      refreshes.push(req.url ?? '');
      res.writeHead(refreshAnswer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(refreshAnswer.body));
    });
    [port, securePort, roguePort, platformPort] = await Promise.all([listen(vendor), listen(secureVendor), listen(rogueVendor), listen(platform)]);
    const config: ChildConfig = {
      clients: [
        {
          packageId: '@acme/keyed', secret: SECRET, authorizedUris: [],
          credential: anIntegration('@acme/keyed', [
            `http://${VENDOR}:${port}/api/*`, `https://${VENDOR}:${securePort}/*`, `https://${VENDOR}:${roguePort}/*`,
            `http://{$credential.tenant}.${VENDOR}:${port}/t/*`, `http://127.0.0.1:${port}/*`, 'http://10.1.2.3/*', `http://${VENDOR}:${platformPort}/*`,
            `http://*.wild.test:${port}/*`,
          ], { access_token: TOKEN, tenant: 'acme' }),
        },
        {
          packageId: '@acme/oauthed', secret: OAUTH_SECRET, authorizedUris: [],
          credential: anIntegration('@acme/oauthed', [`http://${VENDOR}:${port}/api/*`, `https://${VENDOR}:${securePort}/*`], { access_token: EXPIRED }, true),
        },
        // no credential: its tunnels stay end to end
        { packageId: '@acme/plain', secret: PLAIN_SECRET, authorizedUris: [`https://${VENDOR}:${securePort}/*`] },
      ],
      hosts: { [VENDOR]: '127.0.0.1', [`acme.${VENDOR}`]: '127.0.0.1', [`other.${VENDOR}`]: '127.0.0.1', 'api.wild.test': '127.0.0.1' },
      allowInternalHosts: [`${VENDOR}:${port}`, `${VENDOR}:${securePort}`, `${VENDOR}:${roguePort}`, `${VENDOR}:${platformPort}`],
      platformEndpoints: [{ host: '127.0.0.1', port: platformPort }],
      connectionsUrl: `http://127.0.0.1:${platformPort}/internal/connections`,
      eventSecret: 'e'.repeat(43),
      extraCa: cert.cert,
    };
    child = spawn(process.execPath, ['--import', 'tsx', new URL('../support/credential-proxy-child.ts', import.meta.url).pathname], {
      env: { PATH: process.env.PATH },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const ready = new Promise<{ port: number; ca: string }>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the proxy process ended (${code})`)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const message = JSON.parse(line) as { port?: number; ca?: string; note?: string };
        if (message.note) notes.push(message.note);
        else resolve(message as { port: number; ca: string });
      });
    });
    child.stdin!.write(`${JSON.stringify(config)}\n`);
    ({ port: proxyPort, ca: runCa } = await ready);
  });
  after(async () => {
    if (child && child.exitCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.stdin!.end();
      await gone;
    }
    await Promise.all([vendor, secureVendor, rogueVendor, platform].map((s) => new Promise((r) => s.close(r))));
  });

  test('plain HTTP: the vendor receives the credential, the server neither sends nor sees it; its own header of that name is dropped', async () => {
    const res = await viaProxy(proxyPort, `http://${VENDOR}:${port}/api/items`, SECRET, { authorization: 'Bearer made-up-by-the-server' });
    assert.equal(res.status, 200, res.body);
    assert.deepEqual(JSON.parse(res.body), { vendor: 'http', path: '/api/items', credential: 'live' });
    assert.equal(seen.at(-1)!.authorization, `Bearer ${TOKEN}`);
    assert.ok(!JSON.stringify(res).includes(TOKEN));
  });

  test("HTTPS: the tunnel ends at the proxy with a certificate of the run's authority; the request goes on to the vendor over verified TLS with the credential", async () => {
    const res = await viaTunnel(proxyPort, VENDOR, securePort, '/v1/me?x=1', SECRET, runCa);
    assert.equal(res.status, 200, res.body);
    assert.equal(res.issuer, 'agent-platform sidecar');
    assert.deepEqual(JSON.parse(res.body), { vendor: 'https', path: '/v1/me?x=1', credential: 'live' });
    assert.deepEqual(seen.at(-1), { tls: true, host: `${VENDOR}:${securePort}`, path: '/v1/me?x=1', authorization: `Bearer ${TOKEN}` });
    // the server trusting its vendor's own certificate instead is refused: the tunnel is not the vendor's
    const tunnel = await connect(proxyPort, `${VENDOR}:${securePort}`, SECRET);
    const secure = tls.connect({ socket: tunnel.socket!, servername: VENDOR, ca: cert.cert });
    await assert.rejects(new Promise((resolve, reject) => {
      secure.once('secureConnect', resolve);
      secure.once('error', reject);
    }));
    secure.destroy();
  });

  test('a vendor echoing the credential back: the server receives its answer with every form of the credential scrubbed, over HTTP and HTTPS, compressed or not', async () => {
    const answers = [
      await viaProxy(proxyPort, `http://${VENDOR}:${port}/api/echo`, SECRET, { 'accept-encoding': 'gzip, br' }),
      await viaProxy(proxyPort, `http://${VENDOR}:${port}/api/echo?gzip`, SECRET, { 'accept-encoding': 'gzip' }),
      await viaTunnel(proxyPort, VENDOR, securePort, '/v1/echo', SECRET, runCa, { 'accept-encoding': 'gzip' }),
      await viaTunnel(proxyPort, VENDOR, securePort, '/v1/echo?gzip', SECRET, runCa),
    ];
    for (const res of answers) {
      assert.equal(res.status, 200, res.body);
      const [first, ...lines] = res.body.split('\n');
      assert.deepEqual(JSON.parse(first), { received: '[redacted]', accept: 'identity' }, 'the vendor got the credential, asked for an unencoded answer');
      // base64 is searched unpadded (a value followed by more bytes still matches): its padding stays
      assert.deepEqual(lines, ['raw [redacted]', 'b64 [redacted]==', 'pct [redacted]%2Fx', ''], 'each form of the credential in the body');
      assert.equal(res.headers['x-echo'], '[redacted]');
      assert.deepEqual(res.headers['set-cookie'], ['session=[redacted]; Path=/', 'theme=dark']);
      assert.equal(res.headers['content-encoding'], undefined, 'a compressed answer reaches the server decoded');
      const whole = JSON.stringify(res);
      for (const form of [TOKEN, Buffer.from(TOKEN).toString('base64'), `Bearer ${TOKEN}`]) assert.ok(!whole.includes(form), form);
    }
    assert.equal(seen.filter((s) => s.path?.includes('/echo') && s.authorization === `Bearer ${TOKEN}`).length, 4, 'every request carried the credential to the vendor');
  });

  test("the vendor's certificate is verified: one the sidecar does not trust is no vendor", async () => {
    const before = seen.length;
    const res = await viaTunnel(proxyPort, VENDOR, roguePort, '/v1/me', SECRET, runCa);
    assert.equal(res.status, 502);
    assert.match(res.body, /^upstream_unreachable/);
    assert.equal(seen.length, before, 'the rogue vendor heard no request');
  });

  test('a server without a credential keeps its tunnels end to end (the vendor\'s own certificate)', async () => {
    const tunnel = await connect(proxyPort, `${VENDOR}:${securePort}`, PLAIN_SECRET);
    assert.equal(tunnel.status, 200);
    const secure = tls.connect({ socket: tunnel.socket!, servername: VENDOR, ca: cert.cert });
    await new Promise((resolve, reject) => {
      secure.once('secureConnect', resolve);
      secure.once('error', reject);
    });
    assert.equal(secure.getPeerCertificate().subject.CN, VENDOR);
    secure.destroy();
  });

  test('authorized_uris templates are rendered with the credential: its tenant\'s host passes, another does not', async () => {
    // past the allowlist, to the egress guard: a host only a template names is never an internal one the operator allows
    const res = await viaProxy(proxyPort, `http://acme.${VENDOR}:${port}/t/x`, SECRET);
    assert.equal(res.status, 403, res.body);
    assert.match(res.body, /^blocked_target: .*loopback/);
    const other = await viaProxy(proxyPort, `http://other.${VENDOR}:${port}/t/x`, SECRET);
    assert.equal(other.status, 403);
    assert.match(other.body, /^unauthorized_target/);
  });

  test('an entry that does not bind its host (a wildcard) is reached without the credential', async () => {
    const res = await viaProxy(proxyPort, `http://api.wild.test:${port}/x`, SECRET);
    // api.wild.test resolves to loopback, which the operator did not allow for it
    assert.equal(res.status, 403);
    assert.match(res.body, /^blocked_target/);
    assert.ok(await noted('sent without the credential (credential_exfiltration_refused'));
  });

  test('an expired OAuth token: the platform refreshes it once and the request is retried with the new one', async () => {
    refreshes.length = 0;
    const res = await viaProxy(proxyPort, `http://${VENDOR}:${port}/api/me`, OAUTH_SECRET);
    assert.equal(res.status, 200, res.body);
    assert.deepEqual(JSON.parse(res.body), { vendor: 'http', path: '/api/me', credential: 'fresh' });
    assert.equal(refreshes.length, 1);
    assert.match(refreshes[0], /^\/internal\/connections\/conn_oauth\/refresh\?integration=%40acme%2Foauthed$/);
    // HTTPS uses the refreshed token from now on
    const secure = await viaTunnel(proxyPort, VENDOR, securePort, '/v1/me', OAUTH_SECRET, runCa);
    assert.equal(JSON.parse(secure.body).credential, 'fresh');
    assert.equal(refreshes.length, 1);
    assert.ok(await noted('@acme/oauthed: the upstream refused the access token (401); the platform refreshed it'));
  });

  test("a refresh the platform refuses: the vendor's 401 reaches the server with the platform's code", async () => {
    // a second client with an expired token, the platform refusing (the connection needs reconnecting)
    refreshAnswer = { status: 409, body: { code: 'OAUTH_INVALID_GRANT' } };
    const config: ChildConfig = {
      clients: [{ packageId: '@acme/oauthed', secret: OAUTH_SECRET, authorizedUris: [], credential: anIntegration('@acme/oauthed', [`http://${VENDOR}:${port}/api/*`], { access_token: EXPIRED }, true) }],
      hosts: { [VENDOR]: '127.0.0.1' }, allowInternalHosts: [`${VENDOR}:${port}`], platformEndpoints: [],
      connectionsUrl: `http://127.0.0.1:${platformPort}/internal/connections`, eventSecret: 'e'.repeat(43),
    };
    const other = spawn(process.execPath, ['--import', 'tsx', new URL('../support/credential-proxy-child.ts', import.meta.url).pathname], { env: { PATH: process.env.PATH }, stdio: ['pipe', 'pipe', 'inherit'] });
    const otherNotes: string[] = [];
    try {
      const ready = new Promise<{ port: number }>((resolve, reject) => {
        other.once('exit', (code) => reject(new Error(`the proxy process ended (${code})`)));
        createInterface({ input: other.stdout! }).on('line', (line) => {
          const message = JSON.parse(line) as { port?: number; note?: string };
          if (message.note) otherNotes.push(message.note);
          else resolve(message as { port: number });
        });
      });
      other.stdin!.write(`${JSON.stringify(config)}\n`);
      const { port: otherPort } = await ready;
      const res = await viaProxy(otherPort, `http://${VENDOR}:${port}/api/me`, OAUTH_SECRET);
      assert.equal(res.status, 401);
      assert.equal(res.headers[CREDENTIAL_REFRESH_HEADER], 'refused: OAUTH_INVALID_GRANT');
      assert.ok(otherNotes.some((n) => n.includes('could not refresh it (OAUTH_INVALID_GRANT)')));
    } finally {
      refreshAnswer = { status: 200, body: { credentials: { access_token: FRESH } } };
      const gone = new Promise((r) => other.once('exit', r));
      other.stdin!.end();
      await gone;
    }
  });

  test("outside authorized_uris, loopback, private addresses and the platform's ports stay refused, in tunnels too", async () => {
    const before = seen.length;
    const outside = await viaProxy(proxyPort, `http://elsewhere.test:${port}/api/x`, SECRET);
    assert.equal(outside.status, 403);
    assert.match(outside.body, /^unauthorized_target/);
    assert.equal((await connect(proxyPort, `elsewhere.test:${securePort}`, SECRET)).status, 403);
    const loopback = await viaProxy(proxyPort, `http://127.0.0.1:${port}/x`, SECRET);
    assert.equal(loopback.status, 403);
    assert.match(loopback.body, /^blocked_target: .*loopback/);
    const privateAddress = await viaProxy(proxyPort, 'http://10.1.2.3/x', SECRET);
    assert.equal(privateAddress.status, 403);
    assert.match(privateAddress.body, /^blocked_target: .*private/);
    const own = await viaProxy(proxyPort, `http://${VENDOR}:${platformPort}/x`, SECRET);
    assert.equal(own.status, 403);
    assert.match(own.body, /platform's own endpoints/);
    assert.equal((await connect(proxyPort, `${VENDOR}:${platformPort}`, SECRET)).status, 403);
    assert.equal(seen.length, before, 'the vendor heard nothing');
  });

  test('no log line of the proxy holds a credential', () => {
    assert.ok(notes.length > 0);
    for (const token of [TOKEN, FRESH, EXPIRED]) assert.ok(!notes.join('\n').includes(token));
  });
});

describe("the run's certificate authority", () => {
  test('signs a certificate per host on demand (cached), valid for a short time, for that host only, under an authority that signs nothing else below it', async () => {
    const ca = await createRunCa({ validityMs: 3600_000 });
    const root = new X509Certificate(ca.certPem);
    assert.equal(root.ca, true);
    assert.ok(new Date(root.validTo).getTime() - Date.now() <= 3600_000 + 1000);
    assert.equal(ca.contextFor('api.vendor.test'), ca.contextFor('API.vendor.test'), 'cached');
    const server = tls.createServer({ SNICallback: (name, cb) => cb(null, ca.contextFor(name)) });
    const other = await createRunCa();
    return new Promise<void>((resolve, reject) => {
      server.listen(0, '127.0.0.1', () => {
        const at = (server.address() as AddressInfo).port;
        const good = tls.connect({ host: '127.0.0.1', port: at, servername: 'api.vendor.test', ca: ca.certPem }, () => {
          const leaf = good.getPeerX509Certificate()!;
          assert.equal(leaf.checkHost('api.vendor.test'), 'api.vendor.test');
          assert.equal(leaf.checkHost('other.vendor.test'), undefined);
          assert.ok(leaf.verify(root.publicKey));
          good.destroy();
          // another authority's trust does not accept it
          const bad = tls.connect({ host: '127.0.0.1', port: at, servername: 'api.vendor.test', ca: other.certPem });
          bad.once('secureConnect', () => reject(new Error('trusted by another run')));
          bad.once('error', () => {
            server.close();
            resolve();
          });
        });
        good.once('error', reject);
      });
    });
  });
});
