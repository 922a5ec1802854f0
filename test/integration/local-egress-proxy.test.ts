// The egress proxy of local MCP servers, as a server would use it: plain HTTP in absolute form and
// HTTPS through CONNECT reach the integration's authorized_uris; anything else is refused (another
// host, a loopback or private address the operator did not allow, the platform's own ports), and
// a client without the server's secret is answered 407. Redirects are handed back, not followed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { localEgressProxy, type LocalEgressProxy } from '../../sidecar/local-egress-proxy.ts';
import { startConnectProxy } from '../support/connect-proxy.ts';
import { aSelfSignedCert } from '../support/self-signed.ts';

const SECRET = 's'.repeat(43);
const VENDOR = 'vendor.test';

interface Seen { method?: string; url?: string; headers: http.IncomingHttpHeaders }

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

const basic = (secret: string) => `Basic ${Buffer.from(`mcp:${secret}`).toString('base64')}`;

/** One request in absolute form through the proxy: status and body. */
function viaProxy(proxyPort: number, url: string, secret: string | null = SECRET, method = 'GET'): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: new URL(url).host };
    if (secret) headers['proxy-authorization'] = basic(secret);
    const req = http.request({ host: '127.0.0.1', port: proxyPort, method, path: url, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(method === 'POST' ? 'payload' : undefined);
  });
}

/** CONNECT through the proxy: its answer, and the socket when the tunnel opened. */
function connect(proxyPort: number, authority: string, secret: string | null = SECRET): Promise<{ status: number; body: string; socket?: import('node:net').Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, method: 'CONNECT', path: authority, headers: secret ? { 'proxy-authorization': basic(secret) } : {} });
    req.on('connect', (res: IncomingMessage, socket, head: Buffer) => {
      if (res.statusCode === 200) return resolve({ status: 200, body: '', socket });
      // a refusal's body follows its head on the socket
      let body = head.toString('utf8');
      socket.on('data', (c: Buffer) => (body += c));
      socket.on('close', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('response', (res: IncomingMessage) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the egress proxy of local MCP servers', () => {
  const seen: Seen[] = [];
  const vendor = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    req.resume();
    if (req.url === '/moved') {
      res.writeHead(302, { location: 'http://elsewhere.test/' });
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ vendor: 'http', path: req.url }));
  });
  const cert = aSelfSignedCert(VENDOR);
  const secureVendor = https.createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ vendor: 'https', path: req.url }));
  });
  const platform = http.createServer((_req, res) => res.end('platform'));
  let proxy: LocalEgressProxy;
  let proxyPort: number;
  let port: number;
  let securePort: number;
  let platformPort: number;
  let closedPort: number;
  const notes: string[] = [];

  before(async () => {
    [port, securePort, platformPort] = await Promise.all([listen(vendor), listen(secureVendor), listen(platform)]);
    const probe = http.createServer();
    closedPort = await listen(probe);
    await new Promise((r) => probe.close(r));
    proxy = localEgressProxy({
      clients: [
        {
          packageId: '@acme/vendor-tools',
          secret: SECRET,
          authorizedUris: [
            `http://${VENDOR}:${port}/api/*`, `http://${VENDOR}:${port}/moved`, `https://${VENDOR}:${securePort}/*`,
            `http://127.0.0.1:${closedPort}/*`, 'http://10.1.2.3/*', `http://${VENDOR}:${platformPort}/*`,
          ],
        },
        { packageId: '@acme/other', secret: 'o'.repeat(43), authorizedUris: ['https://other.test/*'] },
      ],
      egress: {
        // the operator allows the vendor's host on its ports (as EGRESS_ALLOW_INTERNAL_HOSTS would), not the loopback literal
        allowInternalHosts: [`${VENDOR}:${port}`, `${VENDOR}:${securePort}`, `${VENDOR}:${platformPort}`],
        platformEndpoints: [{ host: '127.0.0.1', port: platformPort }],
        resolve: async (host) => (host === VENDOR ? ['127.0.0.1'] : host === 'other.test' ? ['127.0.0.1'] : []),
      },
      note: (m) => notes.push(m),
    });
    proxyPort = await proxy.listen('127.0.0.1', 0);
  });
  after(async () => {
    await proxy?.close();
    await Promise.all([vendor, secureVendor, platform].map((s) => new Promise((r) => s.close(r))));
  });

  test('plain HTTP in absolute form reaches an authorized URL; the proxy credential stays with the proxy', async () => {
    const res = await viaProxy(proxyPort, `http://${VENDOR}:${port}/api/items?x=1`, SECRET, 'POST');
    assert.equal(res.status, 200, res.body);
    assert.deepEqual(JSON.parse(res.body), { vendor: 'http', path: '/api/items?x=1' });
    const hit = seen.at(-1)!;
    assert.equal(hit.method, 'POST');
    assert.equal(hit.headers['proxy-authorization'], undefined);
    assert.equal(hit.headers.host, `${VENDOR}:${port}`);
  });

  test('HTTPS through a CONNECT tunnel reaches the vendor, TLS end to end with the vendor', async () => {
    const tunnel = await connect(proxyPort, `${VENDOR}:${securePort}`);
    assert.equal(tunnel.status, 200);
    const secure = tls.connect({ socket: tunnel.socket!, servername: VENDOR, ca: cert.cert });
    const body = await new Promise<string>((resolve, reject) => {
      const req = https.request({ host: VENDOR, path: '/v1/me', createConnection: () => secure, headers: { authorization: 'Bearer from-the-server' } }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.end();
    });
    assert.deepEqual(JSON.parse(body), { vendor: 'https', path: '/v1/me' });
    secure.destroy();
  });

  test('without the server\'s secret, or with another server\'s, nothing passes', async () => {
    const before = seen.length;
    const none = await viaProxy(proxyPort, `http://${VENDOR}:${port}/api/items`, null);
    assert.equal(none.status, 407);
    assert.match(String(none.headers['proxy-authenticate']), /^Basic/);
    assert.equal((await viaProxy(proxyPort, `http://${VENDOR}:${port}/api/items`, 'x'.repeat(43))).status, 407);
    assert.equal((await connect(proxyPort, `${VENDOR}:${securePort}`, null)).status, 407);
    // the other server's secret is its own grant: other.test only
    const other = await viaProxy(proxyPort, `http://${VENDOR}:${port}/api/items`, 'o'.repeat(43));
    assert.equal(other.status, 403);
    assert.equal(seen.length, before, 'the vendor heard nothing');
  });

  test('a host or path outside authorized_uris is refused before it is reached', async () => {
    const before = seen.length;
    const host = await viaProxy(proxyPort, `http://elsewhere.test:${port}/api/items`);
    assert.equal(host.status, 403);
    assert.match(host.body, /^unauthorized_target/);
    const path = await viaProxy(proxyPort, `http://${VENDOR}:${port}/admin`);
    assert.equal(path.status, 403);
    const tunnel = await connect(proxyPort, `elsewhere.test:${securePort}`);
    assert.equal(tunnel.status, 403);
    assert.match(tunnel.body, /^unauthorized_target/);
    // the right host on a port no entry names
    assert.equal((await connect(proxyPort, `${VENDOR}:${port + 1 === securePort ? port + 2 : port + 1}`)).status, 403);
    assert.equal(seen.length, before);
    assert.ok(notes.some((n) => n.includes('@acme/vendor-tools') && n.includes('unauthorized_target')));
  });

  test('loopback and private addresses the operator did not allow, and the platform\'s ports, are refused even when authorized', async () => {
    const loopback = await viaProxy(proxyPort, `http://127.0.0.1:${closedPort}/x`);
    assert.equal(loopback.status, 403);
    assert.match(loopback.body, /^blocked_target: .*loopback/);
    const privateAddress = await viaProxy(proxyPort, 'http://10.1.2.3/x');
    assert.equal(privateAddress.status, 403);
    assert.match(privateAddress.body, /^blocked_target: .*private/);
    const tunnel = await connect(proxyPort, `10.1.2.3:80`);
    assert.equal(tunnel.status, 403);
    const own = await viaProxy(proxyPort, `http://${VENDOR}:${platformPort}/x`);
    assert.equal(own.status, 403);
    assert.match(own.body, /platform's own endpoints/);
    assert.equal((await connect(proxyPort, `${VENDOR}:${platformPort}`)).status, 403);
  });

  test("with an organization proxy, both kinds of request travel through it, to the address the guard checked", async () => {
    const org = await startConnectProxy({ credentials: { username: 'corp', password: 'corp-secret' } });
    const through = localEgressProxy({
      clients: [{ packageId: '@acme/vendor-tools', secret: SECRET, authorizedUris: [`http://${VENDOR}:${port}/api/*`, `https://${VENDOR}:${securePort}/*`] }],
      egress: {
        allowInternalHosts: [`${VENDOR}:${port}`, `${VENDOR}:${securePort}`, `127.0.0.1:${org.port}`],
        resolve: async (host) => (host === VENDOR ? ['127.0.0.1'] : []),
      },
      proxy: { url: org.url, username: 'corp', password: 'corp-secret' },
    });
    const throughPort = await through.listen('127.0.0.1', 0);
    try {
      const res = await viaProxy(throughPort, `http://${VENDOR}:${port}/api/via-org`);
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(JSON.parse(res.body), { vendor: 'http', path: '/api/via-org' });
      const tunnel = await connect(throughPort, `${VENDOR}:${securePort}`);
      assert.equal(tunnel.status, 200);
      tunnel.socket!.destroy();
      assert.deepEqual(org.connects.map((c) => c.authority), [`127.0.0.1:${port}`, `127.0.0.1:${securePort}`]);
      assert.ok(org.connects.every((c) => c.authorization === `Basic ${Buffer.from('corp:corp-secret').toString('base64')}`));
    } finally {
      await through.close();
      await org.close();
    }
  });

  test('a redirect is handed back to the server, not followed', async () => {
    const before = seen.length;
    const res = await viaProxy(proxyPort, `http://${VENDOR}:${port}/moved`);
    assert.equal(res.status, 302);
    assert.equal(res.headers.location, 'http://elsewhere.test/');
    assert.equal(seen.length, before + 1, 'one hop only');
  });
});
