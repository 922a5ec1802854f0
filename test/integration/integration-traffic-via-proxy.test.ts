// The organization's default proxy carries its integration traffic: the credential proxy's
// upstream calls, and a run's api_call and remote MCP calls from its sidecar, each through a
// loopback CONNECT proxy that records what passed. The egress guard judges the target first (a
// refused target never reaches the proxy), then the proxy.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { createRunActivities } from '../../activities/run-activities.ts';
import type { SandboxAdapter, SandboxSpec } from '../../activities/sandbox/adapter.ts';
import { runMaterialsFor } from '../../bin/sandbox.ts';
import { readBody } from '../../lib/outbound-http.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { namedPort } from '../support/platform-process.ts';
import { call } from '../support/http.ts';
import { startConnectProxy, type ConnectProxy } from '../support/connect-proxy.ts';
import { anIntegration, anIntegrationWorld, apiKeyAuth, type IntegrationWorld } from './integrations-harness.ts';
import { aSidecarAssignment, bearer, sidecarUrlOf, spawnWarm, startEventReceiver } from './sidecar-run-harness.ts';

const USER = 'org-proxy';
const PASSWORD = 'org-proxy-pass-0123456789';
const API_KEY = 'sk-integration-via-proxy-5a7c';
const REMOTE_TOKEN = 'remote-via-proxy-token-9e2d';
const basic = (password: string) => `Basic ${Buffer.from(`${USER}:${password}`).toString('base64')}`;

async function listen(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** A loopback API that records each request. */
async function anUpstream(port = 0) {
  const seen: Array<{ url: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer(async (req, res) => {
    await readBody(req);
    seen.push({ url: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, path: req.url }));
  });
  const bound = await listen(server, port);
  return { seen, port: bound, url: `http://127.0.0.1:${bound}`, close: () => close(server) };
}

/** The official SDK's MCP server (streamable HTTP, stateless) with one tool, add; it wants X-Api-Key. */
async function anMcpServer() {
  const seenKeys: Array<string | undefined> = [];
  const http = createServer(async (req, res) => {
    seenKeys.push(req.headers['x-api-key'] as string | undefined);
    if (req.headers['x-api-key'] !== REMOTE_TOKEN) return res.writeHead(401).end();
    const raw = (await readBody(req)).toString('utf8');
    const server = new McpServer({ name: 'vendor', version: '1.0.0' });
    server.registerTool('add', { description: 'adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, ({ a, b }) => ({
      content: [{ type: 'text', text: String(a + b) }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res, raw === '' ? undefined : JSON.parse(raw));
  });
  const port = await listen(http);
  return { seenKeys, port, url: `http://127.0.0.1:${port}/mcp`, close: () => close(http) };
}

const tunnelsTo = (proxy: ConnectProxy, port: number) => proxy.connects.filter((c) => c.authority === `127.0.0.1:${port}`);

describe('the credential proxy', () => {
  let world: IntegrationWorld;
  let proxy: ConnectProxy;
  let upstream: Awaited<ReturnType<typeof anUpstream>>;
  /** a loopback port the operator did not allow: the guard refuses it */
  let refusedPort: number;
  let proxyId: string;

  before(async () => {
    proxy = await startConnectProxy({ credentials: { username: USER, password: PASSWORD } });
    upstream = await anUpstream();
    refusedPort = await namedPort();
    world = await anIntegrationWorld([new URL(upstream.url).host, new URL(proxy.url).host]);
    await anIntegration(world, '@acme/crm', apiKeyAuth(upstream.url));
    await anIntegration(world, '@acme/internal', apiKeyAuth(`http://127.0.0.1:${refusedPort}`));
    for (const id of ['@acme/crm', '@acme/internal']) {
      const connected = await world.api.post(`/api/integrations/${id}/auths/key/connect/fields`, { credentials: { api_key: API_KEY } });
      assert.equal(connected.status, 201, connected.text);
    }
  });
  after(async () => {
    await world.close();
    await proxy.close();
    await upstream.close();
  });

  const proxyCall = (target: string, integration = '@acme/crm') => call(world.app.url, 'GET', '/api/credential-proxy/proxy', {
    key: world.key, headers: { 'x-integration-id': integration, 'x-target': target, 'x-session-id': randomUUID() },
  });

  test('without a default proxy the call goes direct; with one, through it, the credential injected end to end', async () => {
    const direct = await proxyCall(`${upstream.url}/contacts`);
    assert.equal(direct.status, 200, direct.text);
    assert.equal(tunnelsTo(proxy, upstream.port).length, 0);

    const created = await world.api.post('/api/proxies', { name: 'Office', url: proxy.url, username: USER, password: PASSWORD, is_default: true });
    assert.equal(created.status, 201, created.text);
    proxyId = created.body.id;
    const res = await proxyCall(`${upstream.url}/contacts?via=proxy`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { ok: true, path: '/contacts?via=proxy' });
    assert.equal(res.headers.get('proxy-status'), 'agent-platform-credential-proxy; received-status=200');
    const tunnels = tunnelsTo(proxy, upstream.port);
    assert.equal(tunnels.length, 1);
    assert.equal(tunnels[0].authorization, basic(PASSWORD));
    assert.equal(upstream.seen.at(-1)?.url, '/contacts?via=proxy');
    assert.equal(upstream.seen.at(-1)?.headers['x-api-key'], API_KEY);
  });

  test('a target the egress guard refuses is refused before the proxy is asked', async () => {
    const before = proxy.connects.length;
    const res = await proxyCall(`http://127.0.0.1:${refusedPort}/contacts`, '@acme/internal');
    assert.equal(res.status, 403, res.text);
    assert.equal(res.body.code, 'blocked_target');
    assert.equal(proxy.connects.length, before, 'the proxy never heard of it');
  });

  test('a proxy refusing the credentials fails the call (502) and the upstream is never reached', async () => {
    assert.equal((await world.api.patch(`/api/proxies/${proxyId}`, { username: USER, password: 'wrong-password-000' })).status, 200);
    const seen = upstream.seen.length;
    const res = await proxyCall(`${upstream.url}/contacts`);
    assert.equal(res.status, 502, res.text);
    assert.equal(res.body.code, 'upstream_unreachable');
    assert.equal(upstream.seen.length, seen);
    assert.equal(proxy.connects.at(-1)?.authorization, basic('wrong-password-000'));
    assert.equal((await world.api.patch(`/api/proxies/${proxyId}`, { username: USER, password: PASSWORD })).status, 200);
  });

  test('a run\'s sidecar is assigned the organization\'s default proxy', async () => {
    const agent = await world.api.post('/api/runs/inline', { manifest: { name: '@inline/proxied', version: '0.1.0', type: 'agent', schema_version: '0.3' }, prompt: 'hi' });
    assert.equal(agent.status, 201, agent.text);
    let started: SandboxSpec | undefined;
    const adapter: SandboxAdapter = {
      kind: 'process',
      async start(spec) {
        started = spec;
        return { sandboxId: 'sbx_captured' };
      },
      alive: async () => false,
      state: async () => 'gone',
      sandboxes: () => [],
      stop: async () => undefined,
      close: async () => undefined,
    };
    const { app } = world;
    const activities = createRunActivities({
      pool: app.deps.database.pool, db: app.deps.database.db, secrets: app.deps.secrets, log: app.deps.log,
      adapter, materials: runMaterialsFor(app.deps), eventsBaseUrl: app.url, bootSeconds: 60, heartbeatSeconds: 10,
      egressAllowInternalHosts: [], limits: { memoryMb: 512, cpus: 1 },
    });
    await activities.boot(agent.body.id);
    assert.deepEqual(started?.sidecar.proxy, { url: proxy.url, username: USER, password: PASSWORD });
    assert.deepEqual(started?.sidecar.model?.proxy, started?.sidecar.proxy);
  });
});

describe('a run\'s integration calls from its sidecar', () => {
  let proxy: ConnectProxy;
  let upstream: Awaited<ReturnType<typeof anUpstream>>;
  let remote: Awaited<ReturnType<typeof anMcpServer>>;
  let refusedPort: number;

  before(async () => {
    proxy = await startConnectProxy({ credentials: { username: USER, password: PASSWORD } });
    upstream = await anUpstream();
    remote = await anMcpServer();
    refusedPort = await namedPort();
  });
  after(async () => {
    await Promise.all([proxy.close(), upstream.close(), remote.close()]);
  });

  async function aSidecar(password: string) {
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret);
    const sidecar = await spawnWarm('sidecar/main.ts');
    const integration = (over: Record<string, unknown>) => ({
      packageId: '@acme/crm', toolPrefix: 'acme_crm', tools: ['api_call'], source: { kind: 'none' }, authKey: 'default',
      connectionId: randomUUID(), authorizedUris: [`${upstream.url}/api/*`],
      delivery: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.api_key}' },
      credentials: { api_key: API_KEY }, ...over,
    });
    const assignment = {
      ...aSidecarAssignment({ eventsUrl: `${receiver.url}/events`, eventSecret: secret, model: null }),
      // the refused port is in authorized_uris but not allowed by the operator: the guard refuses it
      egressAllowInternalHosts: [upstream.url, remote.url, proxy.url].map((u) => new URL(u).host),
      proxy: { url: proxy.url, username: USER, password },
      integrations: [
        integration({}),
        integration({ packageId: '@acme/internal', toolPrefix: 'acme_internal', authorizedUris: [`http://127.0.0.1:${refusedPort}/api/*`] }),
        integration({
          packageId: '@vendor/remote', toolPrefix: 'vendor_remote', tools: ['add'],
          source: { kind: 'remote', url: remote.url, transport: 'streamable-http' },
          authorizedUris: [`${new URL(remote.url).origin}/*`],
          delivery: { in: 'header', name: 'X-Api-Key', value: '{$credential.token}' },
          credentials: { token: REMOTE_TOKEN },
        }),
      ],
    };
    sidecar.assign(assignment);
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${sidecarUrlOf(sidecar)}/mcp`), { requestInit: { headers: bearer(assignment.token) } }));
    const tool = async (name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: args });
      return { isError: result.isError === true, text: (result.content as Array<{ text: string }>).map((c) => c.text).join('') };
    };
    return { tool, stop: async () => (await client.close(), await sidecar.kill(), await receiver.close()) };
  }

  test('api_call and the remote MCP server are reached through the proxy, with its credentials', async (t) => {
    const run = await aSidecar(PASSWORD);
    t.after(() => run.stop());
    const called = await run.tool('acme_crm__api_call', { method: 'GET', url: `${upstream.url}/api/contacts` });
    assert.equal(called.isError, false, called.text);
    assert.equal(JSON.parse(called.text).status, 200);
    assert.equal(upstream.seen.at(-1)?.headers.authorization, `Bearer ${API_KEY}`);
    const tunnels = tunnelsTo(proxy, upstream.port);
    assert.ok(tunnels.length >= 1);
    assert.ok(tunnels.every((c) => c.authorization === basic(PASSWORD)));

    const added = await run.tool('vendor_remote__add', { a: 2, b: 3 });
    assert.equal(added.isError, false, added.text);
    assert.equal(added.text, '5');
    assert.ok(tunnelsTo(proxy, remote.port).length >= 1, 'the MCP server was reached through the proxy');
    assert.equal(remote.seenKeys.at(-1), REMOTE_TOKEN);
  });

  test('a target the egress guard refuses is refused before the proxy is asked', async (t) => {
    const run = await aSidecar(PASSWORD);
    t.after(() => run.stop());
    const before = proxy.connects.length;
    const refused = await run.tool('acme_internal__api_call', { method: 'GET', url: `http://127.0.0.1:${refusedPort}/api/contacts` });
    assert.equal(refused.isError, true);
    assert.match(refused.text, /^blocked_target/);
    assert.equal(proxy.connects.length, before);
  });

  test('a proxy refusing the credentials fails the call and the upstream is never reached', async (t) => {
    const run = await aSidecar('wrong-password-000');
    t.after(() => run.stop());
    const seen = upstream.seen.length;
    const failed = await run.tool('acme_crm__api_call', { method: 'GET', url: `${upstream.url}/api/contacts` });
    assert.equal(failed.isError, true);
    assert.match(failed.text, /^upstream_unreachable: .*organization's proxy/);
    assert.equal(upstream.seen.length, seen);
    assert.equal(proxy.connects.at(-1)?.authorization, basic('wrong-password-000'));
  });
});
