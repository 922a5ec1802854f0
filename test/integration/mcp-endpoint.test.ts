// The API as an MCP server, driven by the official MCP SDK client as an AI client would: it lists
// the tools, searches and describes operations, launches a run of the fixture agent and reads its
// result. Around it, the endpoint's HTTP contract: revisions negotiated, 405 for every method but
// POST, 120 envelopes per minute per caller, 401 with the protected-resource challenge and the
// RFC 9728 metadata it names, and an organization's endpoint out of every other one's reach.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { aKey, anOrg, aSession } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { conformanceChecker } from '../support/openapi-conformance.ts';
import { aRunWorld, endEchoRun, type RunWorld } from '../support/runs.ts';

let world: RunWorld;
let endpoint: string;

before(async () => {
  world = await aRunWorld();
  endpoint = `/api/mcp/o/${world.org.orgId}`;
});
after(() => world.close());

async function connect(headers: Record<string, string>, path = endpoint): Promise<Client> {
  const client = new Client({ name: 'mcp-endpoint-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(world.app.url + path), { requestInit: { headers } }));
  return client;
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
const initialize = (protocolVersion: string) => ({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

/** The structured answer of a tool call. */
function answer(result: Awaited<ReturnType<Client['callTool']>>): any {
  return result.structuredContent;
}

test('the SDK client lists the tools, searches and describes operations, runs an agent and reads its result', async () => {
  const client = await connect(bearer(world.key));
  assert.equal(client.getServerVersion()?.name, 'agent-platform');
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ['describe_operation', 'get_run', 'invoke_operation', 'list_agents', 'run_agent', 'search_operations']);

  const found = answer(await client.callTool({ name: 'search_operations', arguments: { query: 'run agent launch', limit: 5 } }));
  const launch = found.operations.find((o: any) => o.method === 'POST' && o.path === '/api/agents/{scope}/{name}/run');
  assert.ok(launch, JSON.stringify(found));
  assert.equal(launch.permission, 'agents:run');
  const all = answer(await client.callTool({ name: 'search_operations', arguments: { limit: 200 } }));
  assert.ok(!all.operations.some((o: any) => o.path.startsWith('/api/mcp/') || o.path.startsWith('/internal/') || o.path === '/api/openapi.json'), 'only credentialed operations, never the endpoint itself');

  const described = answer(await client.callTool({ name: 'describe_operation', arguments: { operation_id: launch.operation_id } }));
  assert.equal(described.path, '/api/agents/{scope}/{name}/run');
  assert.ok(described.request_body.content['application/json'].schema, 'the body schema');
  assert.ok(described.responses['201'], 'the 201 response');
  assert.ok(Object.keys(described.components).some((ref) => ref === '#/components/schemas/Problem'), 'the referenced Problem schema comes along');

  const agents = answer(await client.callTool({ name: 'list_agents', arguments: {} }));
  assert.equal(agents.status, 200);
  assert.ok(agents.body.data.some((p: any) => (p.packageId ?? p.id) === '@fixtures/agent-echo'), JSON.stringify(agents.body));

  // run_agent waits on the run; the run is ended as its sandbox would end it, once it exists
  const running = client.callTool({ name: 'run_agent', arguments: { agent: '@fixtures/agent-echo', input: { message: 'hello' }, wait_seconds: 50 } });
  let runId: string | undefined;
  while (!runId) {
    const { rows } = await world.app.deps.database.pool.query('SELECT id FROM runs WHERE org_id = $1 ORDER BY created_at DESC LIMIT 1', [world.org.orgId]);
    runId = rows[0]?.id;
    if (!runId) await new Promise((r) => setTimeout(r, 20));
  }
  await endEchoRun(world.app, runId, { echo: 'hello' });
  const ran = answer(await running);
  assert.equal(ran.status, 200, JSON.stringify(ran));
  assert.equal(ran.body.id, runId);
  assert.equal(ran.body.status, 'success');
  assert.deepEqual(ran.body.result, { output: { echo: 'hello' } });

  const read = await client.callTool({ name: 'get_run', arguments: { run_id: runId } });
  assert.equal(read.isError, false, JSON.stringify(read));
  assert.equal(answer(read).body.status, 'success');
  assert.equal(answer(read).logs.status, 200);

  const invoked = answer(await client.callTool({ name: 'invoke_operation', arguments: { operation_id: 'get_api_runs_id', path_params: { id: runId } } }));
  assert.equal(invoked.status, 200);
  assert.equal(invoked.body.id, runId);
  await client.close();
});

test('a session cookie reaches its organization\'s endpoint without X-Org-Id', async () => {
  const { cookie } = await aSession(world.app.deps.database.pool, world.org.ownerId);
  const client = await connect({ cookie });
  const result = answer(await client.callTool({ name: 'invoke_operation', arguments: { operation_id: 'get_api_runs', space_id: world.org.spaceId } }));
  assert.equal(result.status, 200, JSON.stringify(result));
  await client.close();
});

test('permission parity: what the caller cannot do over HTTP it cannot do over MCP, with the same problem code', async () => {
  const pool = world.app.deps.database.pool;
  // a key without agents:run: the launch is refused over HTTP
  const { key } = await aKey(pool, { ...world.org, userId: world.org.ownerId, scopes: ['mcp:read', 'mcp:invoke', 'runs:read', 'agents:read'] });
  const overHttp = await call(world.app.url, 'POST', '/api/agents/@fixtures/agent-echo/run', { key, body: { input: { message: 'hi' } } });
  assert.equal(overHttp.status, 403);
  const client = await connect(bearer(key));
  const viaInvoke = await client.callTool({ name: 'invoke_operation', arguments: { operation_id: 'post_api_agents_scope_name_run', path_params: { scope: '@fixtures', name: 'agent-echo' }, body: { input: { message: 'hi' } } } });
  assert.equal(viaInvoke.isError, true);
  assert.equal(answer(viaInvoke).status, overHttp.status);
  assert.equal(answer(viaInvoke).body.code, overHttp.body.code);
  const viaRun = await client.callTool({ name: 'run_agent', arguments: { agent: '@fixtures/agent-echo', input: { message: 'hi' } } });
  assert.equal(answer(viaRun).body.code, overHttp.body.code);
  // an invalid input is the operation's own problem, whichever way it comes
  const badHttp = await call(world.app.url, 'POST', '/api/agents/@fixtures/agent-echo/run', { key: world.key, body: { input: { wrong: 1 } } });
  assert.equal(badHttp.status, 400);
  const owner = await connect(bearer(world.key));
  const badMcp = answer(await owner.callTool({ name: 'run_agent', arguments: { agent: '@fixtures/agent-echo', input: { wrong: 1 } } }));
  assert.deepEqual([badMcp.status, badMcp.body.code], [badHttp.status, badHttp.body.code]);
  // nothing was launched by the refusals
  const { rows } = await pool.query('SELECT count(*)::int AS n FROM runs WHERE org_id = $1', [world.org.orgId]);
  const before = rows[0].n;
  await client.callTool({ name: 'run_agent', arguments: { agent: '@fixtures/agent-echo', input: { message: 'hi' } } });
  assert.equal((await pool.query('SELECT count(*)::int AS n FROM runs WHERE org_id = $1', [world.org.orgId])).rows[0].n, before);
  await client.close();
  await owner.close();

  // without mcp:invoke, the endpoint searches but invokes nothing; without mcp:read it answers 403
  const { key: reader } = await aKey(pool, { ...world.org, userId: world.org.ownerId, scopes: ['mcp:read', 'runs:read'] });
  const readOnly = await connect(bearer(reader));
  assert.ok(answer(await readOnly.callTool({ name: 'search_operations', arguments: { query: 'runs' } })).total > 0);
  const refused = await readOnly.callTool({ name: 'invoke_operation', arguments: { operation_id: 'get_api_runs' } });
  assert.equal(refused.isError, true);
  assert.equal(answer(refused).code, 'forbidden');
  await readOnly.close();
  const { key: none } = await aKey(pool, { ...world.org, userId: world.org.ownerId, scopes: ['runs:read'] });
  const noMcp = await call(world.app.url, 'POST', endpoint, { key: none, headers: MCP_HEADERS, body: initialize('2025-11-25') });
  assert.equal(noMcp.status, 403);
  assert.equal(noMcp.body.code, 'forbidden');
});

test('the newest revision and the previous one are spoken; others are answered with the newest', async () => {
  for (const [asked, expected] of [['2025-11-25', '2025-11-25'], ['2025-06-18', '2025-06-18'], ['2024-11-05', '2025-11-25']]) {
    const res = await call(world.app.url, 'POST', endpoint, { key: world.key, headers: MCP_HEADERS, body: initialize(asked) });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.result.protocolVersion, expected, `asked ${asked}`);
  }
  const old = await call(world.app.url, 'POST', endpoint, { key: world.key, headers: { ...MCP_HEADERS, 'mcp-protocol-version': '2024-11-05' }, body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } });
  assert.equal(old.status, 400);
  assert.equal(old.body.code, 'invalid_request');
  assert.equal(old.body.param, 'MCP-Protocol-Version');
  const notRpc = await call(world.app.url, 'POST', endpoint, { key: world.key, headers: MCP_HEADERS, body: { hello: 'world' } });
  assert.equal(notRpc.status, 400);
  assert.match(String(notRpc.headers.get('content-type')), /application\/problem\+json/);
});

test('every method but POST answers 405 method_not_allowed with Allow: POST', async () => {
  for (const method of ['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']) {
    const res = await call(world.app.url, method, endpoint, { key: world.key });
    assert.equal(res.status, 405, method);
    assert.equal(res.headers.get('allow'), 'POST', method);
    if (method !== 'HEAD') assert.equal(res.body.code, 'method_not_allowed', method);
  }
  const anonymous = await call(world.app.url, 'GET', endpoint);
  assert.equal(anonymous.status, 405, 'whatever the credential');
});

test('120 envelopes per minute per caller: a batch counts each of its messages', async () => {
  const { key } = await aKey(world.app.deps.database.pool, { ...world.org, userId: world.org.ownerId });
  const note = { jsonrpc: '2.0', method: 'notifications/initialized' };
  const first = await call(world.app.url, 'POST', endpoint, { key, headers: MCP_HEADERS, body: Array.from({ length: 100 }, () => note) });
  assert.equal(first.status, 202, first.text);
  assert.match(String(first.headers.get('ratelimit')), /^limit=120, remaining=20, reset=\d+$/);
  assert.equal(first.headers.get('ratelimit-policy'), '120;w=60');
  const second = await call(world.app.url, 'POST', endpoint, { key, headers: MCP_HEADERS, body: Array.from({ length: 20 }, () => note) });
  assert.equal(second.status, 202);
  assert.match(String(second.headers.get('ratelimit')), /remaining=0/);
  const over = await call(world.app.url, 'POST', endpoint, { key, headers: MCP_HEADERS, body: note });
  assert.equal(over.status, 429);
  assert.equal(over.body.code, 'rate_limited');
  assert.ok(Number(over.headers.get('retry-after')) > 0);
  // another caller has its own bucket
  const other = await call(world.app.url, 'POST', endpoint, { key: world.key, headers: MCP_HEADERS, body: note });
  assert.equal(other.status, 202);
});

test('401 names the protected-resource metadata, which names the endpoint and the instance as issuer', async () => {
  const res = await call(world.app.url, 'POST', endpoint, { headers: MCP_HEADERS, body: initialize('2025-11-25') });
  assert.equal(res.status, 401);
  assert.equal(res.body.code, 'unauthorized');
  const challenge = String(res.headers.get('www-authenticate'));
  const m = /^Bearer resource_metadata="([^"]+)"$/.exec(challenge);
  assert.ok(m, challenge);
  const url = new URL(m[1]);
  assert.equal(url.pathname, `/.well-known/oauth-protected-resource${endpoint}`);
  const meta = await call(world.app.url, 'GET', url.pathname);
  assert.equal(meta.status, 200);
  assert.equal(meta.body.resource, world.app.url + endpoint);
  assert.deepEqual(meta.body.authorization_servers, [world.app.url]);
  assert.deepEqual(meta.body.bearer_methods_supported, ['header']);
  assert.ok(meta.body.scopes_supported.includes('mcp:read') && meta.body.scopes_supported.includes('mcp:invoke'));
  // a revoked key is refused the same way
  const { key, keyId } = await aKey(world.app.deps.database.pool, { ...world.org, userId: world.org.ownerId });
  await world.app.deps.database.pool.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [keyId]);
  const revoked = await call(world.app.url, 'POST', endpoint, { key, headers: MCP_HEADERS, body: initialize('2025-11-25') });
  assert.equal(revoked.status, 401);
  assert.match(String(revoked.headers.get('www-authenticate')), /resource_metadata=/);
});

test("another organization's credential is refused here", async () => {
  const pool = world.app.deps.database.pool;
  const other = await anOrg(pool);
  const { key } = await aKey(pool, { ...other, userId: other.ownerId });
  const res = await call(world.app.url, 'POST', endpoint, { key, headers: MCP_HEADERS, body: initialize('2025-11-25') });
  assert.equal(res.status, 403, 'a key bound to another organization names this one in the path');
  const { cookie } = await aSession(pool, other.ownerId);
  const bySession = await call(world.app.url, 'POST', endpoint, { cookie, headers: MCP_HEADERS, body: initialize('2025-11-25') });
  assert.equal(bySession.status, 403, 'not a member of the organization the path names');
  const own = await call(world.app.url, 'POST', `/api/mcp/o/${other.orgId}`, { key, headers: MCP_HEADERS, body: initialize('2025-11-25') });
  assert.equal(own.status, 200, 'its own endpoint answers');
});

test("the endpoint's answers are the ones the instance's OpenAPI document describes", async () => {
  const check = conformanceChecker((await call(world.app.url, 'GET', '/api/openapi.json')).body);
  const { key } = await aKey(world.app.deps.database.pool, { ...world.org, userId: world.org.ownerId });
  const post = (body: unknown, opts: { key?: string; headers?: Record<string, string> } = {}) => call(world.app.url, 'POST', endpoint, { ...opts, headers: { ...MCP_HEADERS, ...opts.headers }, body });
  const answers = [
    await post(initialize('2025-11-25'), { key }),
    await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { key, headers: { 'mcp-protocol-version': '2025-11-25' } }),
    await post([{ jsonrpc: '2.0', id: 3, method: 'ping' }, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'search_operations', arguments: { query: 'spaces' } } }], { key }),
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { key }),
    await post({ jsonrpc: '2.0', id: 5, method: 'no/such/method' }, { key }),
    await post(initialize('2025-11-25')),
    await post({ not: 'json-rpc' }, { key }),
  ];
  assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 202, 200, 401, 400]);
  assert.ok(Array.isArray(answers[2].body) && answers[2].body.length === 2, 'a batch is answered with a batch');
  assert.equal(answers[4].body.error.code, -32601, 'an unknown method is a JSON-RPC error');
  const mismatches = answers.flatMap((a) => check('POST', endpoint, a));
  const meta = await call(world.app.url, 'GET', `/.well-known/oauth-protected-resource${endpoint}`);
  mismatches.push(...check('GET', `/.well-known/oauth-protected-resource${endpoint}`, meta));
  assert.deepEqual(mismatches, []);
});

test('a browser origin other than the instance or a trusted one is refused (DNS rebinding)', async () => {
  const from = (origin: string, host?: string) => call(world.app.url, 'POST', endpoint, { key: world.key, headers: { ...MCP_HEADERS, origin, ...(host ? { host } : {}) }, body: initialize('2025-11-25') });
  const evil = await from('http://evil.example.com', 'evil.example.com');
  assert.equal(evil.status, 403);
  assert.equal(evil.body.param, 'Origin');
  assert.equal((await from(world.app.url)).status, 200, 'the instance itself (loopback, no PUBLIC_URL)');
  assert.equal((await call(world.app.url, 'POST', endpoint, { key: world.key, headers: MCP_HEADERS, body: initialize('2025-11-25') })).status, 200, 'no Origin: not a browser');
});

test("an invocation honours the operation's Idempotency-Key as an HTTP request does", async () => {
  const client = await connect(bearer(world.key));
  const launch = () => client.callTool({ name: 'run_agent', arguments: { agent: '@fixtures/agent-echo', input: { message: 'once' }, wait_seconds: 0, idempotency_key: 'mcp-once' } });
  const first = answer(await launch());
  const again = answer(await launch());
  assert.equal(first.status, 201, JSON.stringify(first));
  assert.equal(again.status, 201);
  assert.equal(again.body.id, first.body.id, 'the same run');
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.match(first.headers.ratelimit, /^limit=20, /, "the launch route's own limit applies");
  await endEchoRun(world.app, first.body.id);
  await client.close();
});
