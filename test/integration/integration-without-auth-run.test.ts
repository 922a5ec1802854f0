// An integration declaring no auths (a public remote MCP server on loopback, the official SDK's
// server): its agent's launch needs no connection, readiness shows it ready without one, the run
// pins its version, and a real run (sidecar and agent processes, the scripted model) calls its
// tool through the sidecar, which sends no credential, and succeeds with the answer. A mixed agent
// (one such integration and one with an API key) waits only for the API key's connection and
// then gets both. A source none integration without auths is ready and offers no tool.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { createProcessAdapter, type ProcessSandboxAdapter } from '../../activities/sandbox/process-adapter.ts';
import { readBody } from '../../lib/outbound-http.ts';
import { runConnectionSigningPayload } from '../../lib/run-connection-signing.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { parseAssignment } from '../../sidecar/assignment.ts';
import { aKey } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { conformanceChecker } from '../support/openapi-conformance.ts';
import { importPackage } from '../support/runs.ts';
import { anIntegration, anIntegrationWorld, apiKeyAuth, archive, executeInSandbox, type IntegrationWorld } from './integrations-harness.ts';

const CRM_KEY = 'crm-key-without-auth-test-61d0';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** The public MCP server: /v1/mcp and /v2/mcp answer forecast naming their version; every request's headers are kept. */
const mcpHeaders: IncomingHttpHeaders[] = [];
const mcp = createServer(async (req, res) => {
  mcpHeaders.push(req.headers);
  const version = /^\/(v[12])\/mcp$/.exec(req.url ?? '')?.[1];
  if (!version) return res.writeHead(404).end();
  const server = new McpServer({ name: 'weather', version: '1.0.0' });
  server.registerTool('forecast', { description: 'the forecast of a city', inputSchema: { city: z.string() } }, ({ city }) => ({
    content: [{ type: 'text', text: `Sunny in ${city} (${version})` }],
  }));
  const raw = (await readBody(req)).toString('utf8');
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => void transport.close());
  await server.connect(transport);
  await transport.handleRequest(req, res, raw === '' ? undefined : JSON.parse(raw));
});
/** The CRM's API: answers only its key. */
const crm = createServer((req, res) => {
  req.resume();
  const ok = req.headers['x-api-key'] === CRM_KEY;
  res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' }).end(JSON.stringify(ok ? { contacts: 7 } : { error: 'no key' }));
});

let world: IntegrationWorld;
let mcpUrl: string;
let crmUrl: string;
let adapter: ProcessSandboxAdapter;
let workDir: string;

before(async () => {
  mcpUrl = await listen(mcp);
  crmUrl = await listen(crm);
  world = await anIntegrationWorld([mcpUrl, crmUrl].map((u) => new URL(u).host), {}, 'fake-script');
  workDir = await mkdtemp(join(tmpdir(), 'no-auth-run-'));
  adapter = await createProcessAdapter({ warmPool: 0, workDir });

  await anIntegration(world, '@public/weather', { source: { kind: 'remote', url: `${mcpUrl}/v1/mcp`, transport: 'streamable-http' }, default_tools: ['forecast'] });
  await anIntegration(world, '@public/plain', { source: { kind: 'none' }, default_tools: ['api_call'] });
  await anIntegration(world, '@acme/crm', apiKeyAuth(`${crmUrl}/api`));
});
after(async () => {
  await adapter?.close();
  await world?.close();
  if (workDir) await rm(workDir, { recursive: true, force: true });
  await Promise.all([close(mcp), close(crm)]);
});

/** An agent whose scripted model makes these tool calls, selecting `integrations` (id → tools). */
async function anAgent(name: string, integrations: Record<string, string[]>, script: unknown[]): Promise<string> {
  const own = (await aKey(world.app.deps.database.pool, { ...world.org, userId: world.org.ownerId })).key;
  await importPackage(world.app.url, own, archive({
    name, version: '1.0.0', type: 'agent', schema_version: '0.3',
    dependencies: { integrations: Object.fromEntries(Object.keys(integrations).map((id) => [id, '*'])) },
    integrations_configuration: Object.fromEntries(Object.entries(integrations).map(([id, tools]) => [id, { tools }])),
    runtime_tools: ['output'],
    output: { schema: { type: 'object', properties: { forecast: { type: 'string' }, crm: { type: 'string' } }, required: ['forecast'] } },
  }, { 'prompt.md': `Use the integrations.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n` }));
  return name;
}

/** Boots the run in a real sandbox (sidecar and agent processes) and waits for its ending. */
const execute = (runId: string) => executeInSandbox(world, adapter, runId);

async function runIntegrationRows(runId: string) {
  const { rows } = await world.app.deps.database.pool.query(
    'SELECT integration_package_id, integration_version, auth_key, connection_id FROM run_connections WHERE run_id = $1 ORDER BY 1', [runId],
  );
  return rows;
}

const forecastOf = (city: string) => ({ tool: 'public_weather__forecast', arguments: { city } });

describe('an agent using an integration without auths', () => {
  test('readiness shows it ready without a connection, the launch needs none and pins its version', async () => {
    const agent = await anAgent('@acme/forecaster', { '@public/weather': ['forecast'] }, [forecastOf('Oslo'), { tool: 'output', arguments: { forecast: '{{result:0}}' } }]);
    const readiness = await world.api.get(`/api/agents/${agent}/connection-readiness`);
    assert.equal(readiness.status, 200, readiness.text);
    assert.equal(readiness.body.ready, true);
    assert.deepEqual(readiness.body.integrations, [{
      packageId: '@public/weather', ready: true, requires_connection: false, connection_id: null, auth_key: null, owned_by_actor: false,
      needs_reconnection: false, required_auth_key: null, available_auth_keys: [], required_scopes: [], missing_scopes: [], candidate_connections: [],
    }]);
    const check = conformanceChecker((await call(world.app.url, 'GET', '/api/openapi.json')).body);
    assert.deepEqual(check('GET', `/api/agents/${agent}/connection-readiness`, readiness), []);
    const listed = await world.api.get('/api/integrations');
    assert.deepEqual(check('GET', '/api/integrations', listed), []);
    assert.deepEqual(listed.body.data.find((i: any) => i.packageId === '@public/weather')?.auths, []);

    const launch = await world.api.post(`/api/agents/${agent}/run`, { input: {} });
    assert.equal(launch.status, 201, launch.text);
    assert.deepEqual(await runIntegrationRows(launch.body.id), [{ integration_package_id: '@public/weather', integration_version: '1.0.0', auth_key: null, connection_id: null }]);

    // the runner's connection route has nothing to answer for it: no connection is bound
    const { rows } = await world.app.deps.database.pool.query('SELECT event_secret FROM runs WHERE id = $1', [launch.body.id]);
    const secret = world.app.deps.secrets.open(rows[0].event_secret);
    const anyConnection = randomUUID();
    const read = await call(world.app.url, 'GET', `/internal/runs/${launch.body.id}/connections/${anyConnection}?integration=${encodeURIComponent('@public/weather')}`, {
      headers: signedRunEventHeaders(secret, runConnectionSigningPayload('read', anyConnection, '@public/weather')),
    });
    assert.equal(read.status, 400, read.text);
    assert.equal(read.body.code, 'connection_not_in_run');
  });

  test('a run calls its tool through the sidecar, which sends no credential, and succeeds with the answer; the version is the launch\'s', async () => {
    const launch = await world.api.post('/api/agents/@acme/forecaster/run', { input: {} });
    assert.equal(launch.status, 201, launch.text);
    // published after the launch: this run keeps 1.0.0 (/v1/mcp), the next one takes 1.1.0 (/v2/mcp)
    await anIntegration(world, '@public/weather', { source: { kind: 'remote', url: `${mcpUrl}/v2/mcp`, transport: 'streamable-http' }, default_tools: ['forecast'] }, '1.1.0');
    const firstRequest = world.fake.requests.length;
    const seenBefore = mcpHeaders.length;
    const run = await execute(launch.body.id);
    assert.equal(run.status, 'success', JSON.stringify(run.error));
    assert.equal(run.result.output.forecast, 'Sunny in Oslo (v1)');
    const offered = world.fake.requests[firstRequest].body.tools.map((t: { function: { name: string } }) => t.function.name);
    assert.ok(offered.includes('public_weather__forecast'), offered.join(', '));
    const seen = mcpHeaders.slice(seenBefore);
    assert.ok(seen.length > 0, 'the sidecar reached the server');
    for (const headers of seen) {
      assert.equal(headers.authorization, undefined);
      assert.equal(headers['x-api-key'], undefined);
    }

    const next = await world.api.post('/api/agents/@acme/forecaster/run', { input: {} });
    assert.equal(next.status, 201, next.text);
    assert.equal((await runIntegrationRows(next.body.id))[0].integration_version, '1.1.0');
    assert.equal((await execute(next.body.id)).result.output.forecast, 'Sunny in Oslo (v2)');
  });

  test('a mixed agent waits only for the connection of the integration with auths, then gets both', async () => {
    const agent = await anAgent('@acme/mixed', { '@public/weather': ['forecast'], '@acme/crm': ['api_call'] }, [
      forecastOf('Bergen'),
      { tool: 'acme_crm__api_call', arguments: { method: 'GET', url: `${crmUrl}/api/contacts` } },
      { tool: 'output', arguments: { forecast: '{{result:0}}', crm: '{{result:1}}' } },
    ]);
    const refused = await world.api.post(`/api/agents/${agent}/run`, { input: {} });
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.code, 'missing_integration_connection');
    assert.deepEqual(refused.body.errors.map((e: any) => e.packageId), ['@acme/crm']);
    const readiness = await world.api.get(`/api/agents/${agent}/connection-readiness`);
    assert.equal(readiness.body.ready, false);
    const byId = Object.fromEntries(readiness.body.integrations.map((i: any) => [i.packageId, [i.ready, i.requires_connection]]));
    assert.deepEqual(byId, { '@acme/crm': [false, true], '@public/weather': [true, false] });

    const connected = await world.api.post('/api/integrations/@acme/crm/auths/key/connect/fields', { credentials: { api_key: CRM_KEY } });
    assert.equal(connected.status, 201, connected.text);
    const launch = await world.api.post(`/api/agents/${agent}/run`, { input: {} });
    assert.equal(launch.status, 201, launch.text);
    assert.deepEqual(await runIntegrationRows(launch.body.id), [
      { integration_package_id: '@acme/crm', integration_version: '1.0.0', auth_key: 'key', connection_id: connected.body.id },
      { integration_package_id: '@public/weather', integration_version: '1.1.0', auth_key: null, connection_id: null },
    ]);
    const seenBefore = mcpHeaders.length;
    const run = await execute(launch.body.id);
    assert.equal(run.status, 'success', JSON.stringify(run.error));
    assert.equal(run.result.output.forecast, 'Sunny in Bergen (v2)');
    assert.equal(JSON.parse(run.result.output.crm).body, JSON.stringify({ contacts: 7 }));
    assert.ok(mcpHeaders.slice(seenBefore).every((h) => h['x-api-key'] === undefined), 'the CRM key never reached the public server');
  });

  test('a source none integration without auths is ready, and the boot gives the sidecar none of it', async () => {
    const agent = await anAgent('@acme/plain-user', { '@public/plain': ['api_call'], '@public/weather': ['forecast'] }, [forecastOf('Tromsø'), { tool: 'output', arguments: { forecast: '{{result:0}}' } }]);
    const launch = await world.api.post(`/api/agents/${agent}/run`, { input: {} });
    assert.equal(launch.status, 201, launch.text);
    assert.deepEqual((await runIntegrationRows(launch.body.id)).map((r) => [r.integration_package_id, r.auth_key, r.connection_id]), [['@public/plain', null, null], ['@public/weather', null, null]]);
    const { sidecar } = await world.bootAssignment(launch.body.id);
    assert.deepEqual(sidecar.integrations, [{
      packageId: '@public/weather', toolPrefix: 'public_weather', tools: ['forecast'],
      source: { kind: 'remote', url: `${mcpUrl}/v2/mcp`, transport: 'streamable-http' },
      authKey: null, connectionId: null, authorizedUris: [], delivery: null, credentials: {},
    }]);
    // the sidecar reads the same line back
    assert.deepEqual(parseAssignment(JSON.stringify({ ...sidecar, token: 'a'.repeat(43) })).integrations, sidecar.integrations);

    const real = await world.api.post(`/api/agents/${agent}/run`, { input: {} });
    const firstRequest = world.fake.requests.length;
    const run = await execute(real.body.id);
    assert.equal(run.status, 'success', JSON.stringify(run.error));
    assert.equal(run.result.output.forecast, 'Sunny in Tromsø (v2)');
    const offered = world.fake.requests[firstRequest].body.tools.map((t: { function: { name: string } }) => t.function.name);
    assert.ok(!offered.some((name: string) => name.startsWith('public_plain__')), offered.join(', '));
  });
});
