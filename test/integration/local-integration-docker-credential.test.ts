// A local integration whose auth declares delivery.http, through the platform on RUN_ADAPTER=docker:
// a stdio MCP server (the fixture) packaged as the integration's server calls a fake vendor on the
// host over HTTP and HTTPS through the sidecar's egress proxy. The sidecar puts the connection's
// credential on those requests (the vendor receives it); the server's runtime trusts the run's
// authority for the HTTPS the sidecar terminates, and the sidecar trusts the vendor's private
// authority only because the operator named it (SANDBOX_EGRESS_CA_FILE). The server never holds the
// credential: not in its environment, not in what it sent or wrote, not in what the vendor echoed
// back. Another host, loopback, a private address and the platform's port are refused, and the
// credential is in none of the run's logs, events or record.
//
// The vendor listens on the gateway address of a docker network this test makes, which the run's
// sidecar joins once booted (the model's first answer waits for it), as a sidecar reaches a vendor
// on the internet: the host's other ports stay closed to the sandbox's own networks.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { createDockerAdapter, LABEL_ROLE, LABEL_RUN, type DockerSandboxAdapter } from '../../activities/sandbox/docker-adapter.ts';
import { runActivitiesFor } from '../../bin/sandbox.ts';
import { freePort } from '../../lib/free-port.ts';
import { allowedLocalImages } from '../../lib/local-integration-images.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { AGENT_IMAGE, DOCKER_REQUIRED, dockerForTests, SIDECAR_IMAGE } from '../support/docker.ts';
import { client } from '../support/http.ts';
import { aDefaultModel, importPackage, waitForStatus } from '../support/runs.ts';
import { aSelfSignedCert } from '../support/self-signed.ts';
import { archive } from './integrations-harness.ts';

const unavailable = await dockerForTests();
const SERVER = readFileSync(new URL('../fixtures/local-mcp-server/server.cjs', import.meta.url), 'utf8');
const TOKEN = 'vk_live_docker_7c1e9a3f5b2d8e4a6c0f';

const outputSchema = {
  type: 'object',
  properties: { fetched: { type: 'string' }, environment: { type: 'string' } },
  required: ['fetched', 'environment'],
  additionalProperties: false,
};

function listenOn(server: http.Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve((server.address() as AddressInfo).port));
  });
}

describe('a local integration with delivery.http through the platform on the docker backend', { skip: unavailable ?? false }, () => {
  const docker = new Docker();
  const vendorNet = `apt-vendor-${Date.now().toString(36)}`;
  /** what the vendor received: the authorization header as sent */
  const seen: Array<{ tls: boolean; path?: string; authorization?: string }> = [];
  const vendorHandler = (secure: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    seen.push({ tls: secure, path: req.url, authorization: req.headers.authorization });
    req.resume();
    const auth = req.headers.authorization;
    if (req.url?.startsWith('/api/echo')) {
      // a careless vendor: the credential it received, back in a header and the body
      res.writeHead(200, { 'content-type': 'text/plain', 'x-echo': auth ?? '' });
      return void res.end(`received ${auth}; key ${auth?.replace(/^Bearer /, '')}`);
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    // whether the credential came, never the credential
    res.end(JSON.stringify({ vendor: secure ? 'https' : 'http', path: req.url, credential: auth === `Bearer ${TOKEN}` ? 'live' : auth ? 'other' : 'none' }));
  };
  const vendor = http.createServer(vendorHandler(false));
  let secureVendor: https.Server;
  let gateway: string;
  let vendorPort: number;
  let secureVendorPort: number;
  let fake: FakeModel;
  let app: TestApp;
  let appPort: number;
  let adapter: DockerSandboxAdapter;
  let workDir: string;
  let org: Awaited<ReturnType<typeof anOrg>>;
  let api: ReturnType<typeof client>;
  const started: string[] = [];

  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'local-integration-credential-'));
    await docker.createNetwork({ Name: vendorNet, Driver: 'bridge', Internal: true, Labels: { 'agent-platform.test': 'vendor' } });
    const info = await docker.getNetwork(vendorNet).inspect();
    gateway = info.IPAM?.Config?.find((c: { Gateway?: string }) => c.Gateway && !c.Gateway.includes(':'))?.Gateway as string;
    assert.ok(gateway, 'the vendor network has a gateway address on this host');
    // the vendor's certificate, from an authority of its own that only the operator's setting makes the sidecar trust
    const cert = aSelfSignedCert(gateway);
    const caFile = join(workDir, 'vendor-ca.pem');
    writeFileSync(caFile, cert.cert);
    secureVendor = https.createServer({ key: cert.key, cert: cert.cert }, vendorHandler(true));
    [vendorPort, secureVendorPort] = await Promise.all([listenOn(vendor, gateway), listenOn(secureVendor, gateway)]);

    fake = await startFakeModel();
    appPort = await freePort();
    app = await startTestApp({
      port: appPort,
      env: {
        RUN_ADAPTER: 'docker',
        INTERNAL_API_URL: `http://127.0.0.1:${appPort}`,
        // the operator allows the model server and the vendor's two ports, although internal addresses
        EGRESS_ALLOW_INTERNAL_HOSTS: [new URL(fake.url).host, `${gateway}:${vendorPort}`, `${gateway}:${secureVendorPort}`].join(','),
        SANDBOX_EGRESS_CA_FILE: caFile,
      },
    });
    const pool = app.deps.database.pool;
    org = await anOrg(pool);
    const key = (await aKey(pool, { ...org, userId: org.ownerId })).key;
    await aDefaultModel(app.url, key, fake.url, 'fake-script');
    api = client(app.url, { key });
    adapter = await createDockerAdapter({
      workDir: join(workDir, 'sandboxes'), sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE, localIntegrationImages: allowedLocalImages(app.deps.config),
    });
  });
  after(async () => {
    for (const id of started) await adapter.stop(id);
    await adapter?.close();
    await app?.close();
    await fake?.close();
    await Promise.all([vendor, secureVendor].filter(Boolean).map((s) => new Promise((r) => s.close(r))));
    await docker.getNetwork(vendorNet).remove().catch(() => undefined);
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  const imported = async (pkg: Buffer) => {
    const own = (await aKey(app.deps.database.pool, { ...org, userId: org.ownerId })).key;
    return importPackage(app.url, own, pkg);
  };

  test("the server's tool calls its vendor over HTTP and HTTPS with the credential the sidecar injects; the server never holds it, other targets are refused, and the run's logs and events never carry it", async () => {
    const vendorHttp = `http://${gateway}:${vendorPort}`;
    const vendorHttps = `https://${gateway}:${secureVendorPort}`;
    await imported(archive({
      name: '@acme/vendor-server', version: '1.0.0', type: 'mcp-server', schema_version: '0.3', server: { command: ['node', 'server.cjs'], env: {} },
    }, { 'server.cjs': SERVER }));
    await imported(archive({
      name: '@acme/local-vendor', version: '1.0.0', type: 'integration', schema_version: '0.3',
      source: { kind: 'local', server: { name: '@acme/vendor-server', version: '^1.0.0' } },
      default_tools: ['fetch', 'environment'],
      auths: {
        key: {
          type: 'api_key',
          credentials: { schema: { type: 'object', properties: { api_key: { type: 'string', minLength: 4 } }, required: ['api_key'] } },
          // the loopback, private and platform entries are authorized here so that the egress guard is what refuses them
          authorized_uris: [`${vendorHttp}/api/*`, `${vendorHttps}/*`, `http://127.0.0.1:${vendorPort}/*`, 'http://10.1.2.3/*', `http://127.0.0.1:${appPort}/*`],
          delivery: { http: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.api_key}' } },
        },
      },
    }));
    const urls = [
      `${vendorHttp}/api/items`, `${vendorHttps}/v1/me`, `${vendorHttp}/api/echo`,
      'http://elsewhere.example:80/api/items', `http://127.0.0.1:${vendorPort}/api/items`, 'http://10.1.2.3/x', `http://127.0.0.1:${appPort}/api/health`,
    ];
    const script = [
      { tool: 'acme_local-vendor__fetch', arguments: { urls } },
      { tool: 'acme_local-vendor__environment', arguments: {} },
      { tool: 'output', arguments: { fetched: '{{result:0}}', environment: '{{result:1}}' } },
    ];
    await imported(archive({
      name: '@acme/vendor-agent', version: '1.0.0', type: 'agent', schema_version: '0.3',
      dependencies: { integrations: { '@acme/local-vendor': '^1.0.0' } },
      integrations_configuration: { '@acme/local-vendor': { tools: ['fetch', 'environment'] } },
      runtime_tools: ['output'],
      output: { schema: outputSchema },
    }, { 'prompt.md': `Call the vendor.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n` }));
    const connected = await api.post('/api/integrations/@acme/local-vendor/auths/key/connect/fields', { credentials: { api_key: TOKEN } });
    assert.equal(connected.status, 201, connected.text);

    const launch = await api.post('/api/agents/@acme/vendor-agent/run', { input: {} });
    assert.equal(launch.status, 201, launch.text);
    const runId = launch.body.id as string;
    // the model's first answer waits while the sidecar joins the vendor's network
    fake.setLatency(4000);
    let sandboxId: string;
    try {
      ({ sandboxId } = await runActivitiesFor(app.deps, adapter).boot(runId));
      started.push(sandboxId);
      await docker.getNetwork(vendorNet).connect({ Container: adapter.containers(sandboxId).sidecar });
    } finally {
      fake.setLatency(0);
    }
    const [server] = await docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${runId}`, `${LABEL_ROLE}=mcp`] } });
    assert.ok(server, 'the local server has a container of its own');

    const run = await waitForStatus(api, runId, (status) => !['pending', 'running'].includes(status), 60_000);
    assert.equal(run.status, 'success', JSON.stringify(run.error));
    const results = JSON.parse(run.result.output.fetched) as Array<{ status: number; body: string; sent: Record<string, string> }>;

    // the vendor: reached over both, with the credential; the server sent no credential of its own
    assert.deepEqual(results[0], { status: 200, body: JSON.stringify({ vendor: 'http', path: '/api/items', credential: 'live' }), sent: { host: `${gateway}:${vendorPort}` } });
    assert.deepEqual(results[1], { status: 200, body: JSON.stringify({ vendor: 'https', path: '/v1/me', credential: 'live' }), sent: { host: `${gateway}:${secureVendorPort}` } },
      "HTTPS: the server's runtime trusted the run's authority, the sidecar the vendor's (SANDBOX_EGRESS_CA_FILE)");
    // (the server fetches them all at once: in any order)
    assert.deepEqual(seen.map((s) => [s.path, s.tls, s.authorization]).sort(), [
      ['/api/echo', false, `Bearer ${TOKEN}`], ['/api/items', false, `Bearer ${TOKEN}`], ['/v1/me', true, `Bearer ${TOKEN}`],
    ], 'the vendor received the credential on each request, and no other request');
    assert.equal(results[2].status, 200);
    assert.equal(results[2].body, 'received [redacted]; key [redacted]', 'what the vendor echoed reached the server scrubbed (the header value whole, and the key)');

    // refused: another host, loopback, a private address, the platform's port
    assert.equal(results[3].status, 403);
    assert.match(results[3].body, /^unauthorized_target/);
    assert.equal(results[4].status, 403);
    assert.match(results[4].body, /^blocked_target: .*loopback/);
    assert.equal(results[5].status, 403);
    assert.match(results[5].body, /^blocked_target: .*private/);
    assert.equal(results[6].status, 403);
    assert.match(results[6].body, /platform's own endpoints/);

    // the server: its environment holds the proxy and the run's authority, not the credential
    const seenBy = JSON.parse(run.result.output.environment) as { env: Record<string, string> };
    assert.match(seenBy.env.HTTPS_PROXY, /^http:\/\/mcp:[A-Za-z0-9_-]{43}@sidecar:3128$/);
    assert.equal(seenBy.env.NODE_EXTRA_CA_CERTS, '/tmp/agent-platform-trust/run-ca.pem');
    assert.equal(seenBy.env.SSL_CERT_FILE, '/tmp/agent-platform-trust/ca-bundle.pem');
    assert.ok(!JSON.stringify(seenBy).includes(TOKEN), "the credential is not in the server's environment");
    const serverLog = String(await docker.getContainer(server.Id).logs({ stdout: true, stderr: true }));
    assert.match(serverLog, new RegExp(`fetch ${vendorHttps.replace(/[.]/g, '\\.')}/v1/me`), 'the server wrote what it fetched');
    assert.ok(!serverLog.includes(TOKEN) && !/authorization/i.test(serverLog.replace(/proxy-authorization/gi, '')), 'nor in what the server wrote');

    // the run: its logs (API and table), its record and the sidecar's output
    const logs = await api.get(`/api/runs/${runId}/logs`);
    assert.equal(logs.status, 200, logs.text);
    assert.ok(logs.body.data.length > 0, 'the run has logs to search');
    const { rows } = await app.deps.database.pool.query(
      `SELECT (SELECT coalesce(json_agg(l), '[]')::text FROM run_logs l WHERE l.run_id = $1) AS logs, (SELECT row_to_json(r)::text FROM runs r WHERE r.id = $1) AS record`, [runId]);
    const sidecarLog = String(await docker.getContainer(adapter.containers(sandboxId).sidecar).logs({ stdout: true, stderr: true }));
    for (const [where, text] of Object.entries({ 'the logs route': JSON.stringify(logs.body), 'run_logs': rows[0].logs, 'the run record': rows[0].record, 'the run as served': JSON.stringify(run), "the sidecar's output": sidecarLog })) {
      assert.ok(!text.includes(TOKEN), `the credential is not in ${where}`);
    }
  });
});

test('the local integration credential test runs here when CI requires it', () => {
  if (DOCKER_REQUIRED) assert.equal(unavailable, null);
  else if (unavailable) assert.match(unavailable, /docker/);
});
