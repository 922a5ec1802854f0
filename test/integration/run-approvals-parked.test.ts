// Parking a run that waits for a person's approval, on the whole platform (its engine, process
// sandboxes under bubblewrap, a scripted model and a loopback MCP server as the upstream): past
// RUN_PARK_AFTER_SECONDS the run's state goes to its checkpoint and its sandbox is stopped (no
// process of the run remains, `awaiting.parked` is true); the decision boots a fresh sandbox that
// makes the held call exactly once (approved) or tells the model of the refusal (rejected, expired).
// The same holds for an http integration's `api_call` (a connection's key, a counting loopback upstream).
// A run parked when the platform and its engine are killed is woken by the decision after the restart.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { readBody } from '../../lib/outbound-http.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { startWeatherUpstream, type WeatherUpstream } from '../support/approval-agent.ts';
import { aKey, anOrg, type BuiltOrg } from '../support/builders.ts';
import { processesNaming } from '../support/embedded-platform.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importPackage, waitForStatus } from '../support/runs.ts';
import { apiKeyAuth, archive } from './integrations-harness.ts';

/** The upstream: an MCP server whose forecast tool counts its calls by city (started in before()). */
let upstream: WeatherUpstream;

/** The api_call upstream: a plain HTTP ledger counting every request it receives (method, path, key). */
const LEDGER_KEY = 'ledger-key-parked-4b1d';
const ledgerCalls: Array<{ method: string; path: string; key: string | undefined; body: string }> = [];
const ledger: Server = createServer(async (req, res) => {
  const body = (await readBody(req)).toString('utf8');
  ledgerCalls.push({ method: req.method ?? '', path: req.url ?? '', key: req.headers['x-api-key'] as string | undefined, body });
  const ok = req.headers['x-api-key'] === LEDGER_KEY;
  res.writeHead(ok ? 201 : 401, { 'content-type': 'application/json' }).end(JSON.stringify(ok ? { payment: 'pay_1', booked: true } : { error: 'no key' }));
});
let ledgerUrl: string;

let fake: FakeModel;
let platform: PlatformProcess;
let pool: pg.Pool;
let org: BuiltOrg;
let api: ReturnType<typeof client>;

const forecastOf = (city: string) => ({ tool: 'public_weather__forecast', arguments: { city } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The processes of the platform's sandboxes (their folders are under <data>/sandboxes). */
function sandboxProcesses(): Array<{ pid: number; cmd: string }> {
  const root = path.join(platform.dataDir, 'sandboxes');
  const found = processesNaming(root);
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || found.some((p) => p.pid === Number(entry))) continue;
    try {
      if (fs.readlinkSync(`/proc/${entry}/cwd`).startsWith(root)) found.push({ pid: Number(entry), cmd: 'cwd in a sandbox' });
    } catch { /* gone, or not ours to read */ }
  }
  return found;
}

const sandboxFolders = (): string[] => {
  try {
    return fs.readdirSync(path.join(platform.dataDir, 'sandboxes'));
  } catch {
    return [];
  }
};

async function anAgent(name: string, approvals: Record<string, unknown>, script: unknown[]): Promise<void> {
  const own = (await aKey(pool, { ...org, userId: org.ownerId })).key;
  await importPackage(platform.url, own, archive({
    name, version: '1.0.0', type: 'agent', schema_version: '0.3',
    dependencies: { integrations: { '@public/weather': '*' } },
    integrations_configuration: { '@public/weather': { tools: ['forecast'] } },
    runtime_tools: ['output'],
    output: { schema: { type: 'object', properties: { forecast: { type: 'string' } }, required: ['forecast'] } },
    approvals,
  }, { 'prompt.md': `Tell the forecast.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n` }));
}

/** An agent paying through the ledger's api_call (the scripted call first, then its output). */
async function aLedgerAgent(name: string, approvals: Record<string, unknown>, script: unknown[]): Promise<void> {
  const own = (await aKey(pool, { ...org, userId: org.ownerId })).key;
  await importPackage(platform.url, own, archive({
    name, version: '1.0.0', type: 'agent', schema_version: '0.3',
    dependencies: { integrations: { '@acme/ledger': '*' } },
    integrations_configuration: { '@acme/ledger': { tools: ['api_call'] } },
    runtime_tools: ['output'],
    output: { schema: { type: 'object', properties: { receipt: { type: 'string' } }, required: ['receipt'] } },
    approvals,
  }, { 'prompt.md': `Book the payment.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n` }));
}

/** Launches the agent and waits until the run is parked on its first request; answers the run and the request. */
async function aParkedRun(agent: string): Promise<{ runId: string; approvalId: string; heldIn: string[] }> {
  const launch = await api.post(`/api/agents/${agent}/run`, { input: {} });
  assert.equal(launch.status, 201, launch.text);
  const runId = launch.body.id;
  const heldIn = new Set<string>();
  const deadline = Date.now() + 90_000;
  for (;;) {
    const run = (await api.get(`/api/runs/${runId}`)).body;
    assert.ok(run.status === 'pending' || run.status === 'running', `the run ended before it parked: ${JSON.stringify(run)}`);
    for (const f of sandboxFolders()) heldIn.add(f);
    if (run.awaiting?.parked === true) return { runId, approvalId: run.awaiting.approval_id, heldIn: [...heldIn] };
    // a short request may expire (and the run wake) between two looks: the run's record says it parked
    const { rows: [kept] } = await pool.query('SELECT parked_at IS NOT NULL AS parked FROM runs WHERE id = $1', [runId]);
    if (kept.parked && !run.awaiting) {
      const list = (await api.get(`/api/runs/${runId}/approvals`)).body.data;
      return { runId, approvalId: list[0].id, heldIn: [...heldIn] };
    }
    if (Date.now() > deadline) throw new Error(`run ${runId} did not park: ${JSON.stringify(run)}`);
    await sleep(100);
  }
}

/** Waits for the run's end, noting the sandbox folders seen meanwhile. */
async function endOf(runId: string): Promise<{ run: any; seen: string[] }> {
  const seen = new Set<string>();
  const deadline = Date.now() + 90_000;
  for (;;) {
    for (const f of sandboxFolders()) seen.add(f);
    const res = await api.get(`/api/runs/${runId}`).catch(() => null);
    if (res?.status === 200 && res.body.status !== 'pending' && res.body.status !== 'running') return { run: res.body, seen: [...seen] };
    if (Date.now() > deadline) throw new Error(`run ${runId} did not end (last: ${res?.text})`);
    await sleep(50);
  }
}

before(async () => {
  upstream = await startWeatherUpstream();
  const upstreamUrl = upstream.url;
  await new Promise<void>((resolve) => ledger.listen(0, '127.0.0.1', resolve));
  ledgerUrl = `http://127.0.0.1:${(ledger.address() as AddressInfo).port}`;
  fake = await startFakeModel();
  platform = await startPlatformProcess({
    env: {
      RUN_HEARTBEAT_SECONDS: '1', RUN_PARK_AFTER_SECONDS: '1', SANDBOX_WARM_POOL: '0',
      EGRESS_ALLOW_INTERNAL_HOSTS: [new URL(fake.url).host, new URL(upstreamUrl).host, new URL(ledgerUrl).host].join(','),
    },
  });
  pool = new pg.Pool({ connectionString: platform.db.url, max: 2 });
  org = await anOrg(pool);
  const key = (await aKey(pool, { ...org, userId: org.ownerId })).key;
  api = client(platform.url, { key });
  await aDefaultModel(platform.url, key, fake.url, 'fake-script');
  await importPackage(platform.url, key, archive({
    name: '@public/weather', version: '1.0.0', type: 'integration', schema_version: '0.3',
    source: { kind: 'remote', url: `${upstreamUrl}/mcp`, transport: 'streamable-http' }, default_tools: ['forecast'],
  }));
  await anAgent('@acme/parker', { tools: ['public_weather__forecast'] }, [forecastOf('Oslo'), { tool: 'output', arguments: { forecast: '{{result:0}}' } }]);
  await importPackage(platform.url, key, archive({
    name: '@acme/ledger', version: '1.0.0', type: 'integration', schema_version: '0.3', ...apiKeyAuth(`${ledgerUrl}/api`),
  }));
  const connected = await api.post('/api/integrations/@acme/ledger/auths/key/connect/fields', { credentials: { api_key: LEDGER_KEY } });
  assert.equal(connected.status, 201, connected.text);
  await aLedgerAgent('@acme/payer', { tools: ['acme_ledger__api_call'] }, [
    { tool: 'acme_ledger__api_call', arguments: { method: 'POST', url: `${ledgerUrl}/api/payments`, body: { amount: 42, to: 'Oslo' } } },
    { tool: 'output', arguments: { receipt: '{{result:0}}' } },
  ]);
  await anAgent('@acme/brief-parker', { tools: ['public_weather__forecast'], timeout_seconds: 8 }, [forecastOf('Tromso'), { tool: 'output', arguments: { forecast: '{{result:0}}' } }]);
});

after(async () => {
  await pool?.end();
  await platform?.stop();
  await fake?.close();
  await upstream?.close();
  ledger.closeAllConnections();
  await new Promise<void>((resolve) => ledger.close(() => resolve()));
});

describe('a run waiting for an approval is parked', () => {
  test('parked: no process of the run remains and the upstream is not called; approved, a fresh sandbox makes the call once and the run succeeds', async () => {
    upstream.calls.length = 0;
    const { runId, approvalId, heldIn } = await aParkedRun('@acme/parker');
    assert.match(approvalId, /^apr_/);
    assert.ok(heldIn.length >= 1, 'the run held a sandbox before it parked');
    const parked = (await api.get(`/api/runs/${runId}`)).body;
    assert.equal(parked.status, 'running');
    assert.equal(parked.awaiting.kind, 'approval');
    assert.equal(parked.awaiting.parked, true);
    // the park delay is past: nothing of the run runs, and its sandbox folder is gone
    await sleep(1_500);
    assert.deepEqual(sandboxProcesses(), []);
    assert.deepEqual(sandboxFolders(), []);
    assert.deepEqual(upstream.calls, []);
    // the state is kept sealed: the checkpoint row names its pending call, its state is not readable JSON
    const { rows: [kept] } = await pool.query('SELECT pending_calls, state FROM run_checkpoints WHERE run_id = $1', [runId]);
    assert.equal(kept.pending_calls, 1);
    assert.ok(!kept.state.includes('Oslo'), 'the checkpoint is sealed');

    const approved = await api.post(`/api/runs/${runId}/approvals/${approvalId}`, { decision: 'approve' });
    assert.equal(approved.status, 200, approved.text);
    const { run, seen } = await endOf(runId);
    assert.equal(run.status, 'success', JSON.stringify(run));
    assert.deepEqual(run.result.output, { forecast: 'Sunny in Oslo' });
    assert.deepEqual(upstream.calls, ['Oslo']);
    assert.ok(seen.some((f) => !heldIn.includes(f)), `the run was woken in a new sandbox (held ${heldIn}, then ${seen})`);
    // one request: the woken run took the decision made while it was parked
    const list = (await api.get(`/api/runs/${runId}/approvals`)).body.data;
    assert.deepEqual(list.map((a: any) => [a.id, a.status]), [[approvalId, 'approved']]);
    // the fresh sandbox goes with the run's end (torn down right after it is recorded)
    const gone = Date.now() + 15_000;
    while (sandboxProcesses().length > 0 && Date.now() < gone) await sleep(100);
    assert.deepEqual(sandboxProcesses(), []);
  });

  test("an api_call needing approval parks: the upstream is not called before the decision; approved after the park delay, a new sandbox makes the call exactly once and the run succeeds", async () => {
    ledgerCalls.length = 0;
    const { runId, approvalId, heldIn } = await aParkedRun('@acme/payer');
    assert.ok(heldIn.length >= 1, 'the run held a sandbox before it parked');
    const parked = (await api.get(`/api/runs/${runId}`)).body;
    assert.equal(parked.status, 'running');
    assert.deepEqual([parked.awaiting.kind, parked.awaiting.approval_id, parked.awaiting.parked], ['approval', approvalId, true]);
    const [request] = (await api.get(`/api/runs/${runId}/approvals`)).body.data;
    assert.deepEqual([request.id, request.status, request.tool], [approvalId, 'pending', 'acme_ledger__api_call']);
    assert.deepEqual([request.arguments.method, request.arguments.url], ['POST', `${ledgerUrl}/api/payments`]);
    // past the park delay: no process of the run, no sandbox folder, and the ledger still untouched
    await sleep(1_500);
    assert.deepEqual(sandboxProcesses(), []);
    assert.deepEqual(sandboxFolders(), []);
    assert.equal(ledgerCalls.length, 0, 'the upstream is not called before the decision');
    const { rows: [kept] } = await pool.query('SELECT pending_calls FROM run_checkpoints WHERE run_id = $1', [runId]);
    assert.equal(kept.pending_calls, 1);

    const approved = await api.post(`/api/runs/${runId}/approvals/${approvalId}`, { decision: 'approve' });
    assert.equal(approved.status, 200, approved.text);
    const { run, seen } = await endOf(runId);
    assert.equal(run.status, 'success', JSON.stringify(run));
    assert.ok(seen.some((f) => !heldIn.includes(f)), `the run was woken in a new sandbox (held ${heldIn}, then ${seen})`);
    // exactly one request reached the ledger, with the connection's key added by the platform
    assert.deepEqual(ledgerCalls, [{ method: 'POST', path: '/api/payments', key: LEDGER_KEY, body: JSON.stringify({ amount: 42, to: 'Oslo' }) }]);
    const receipt = JSON.parse(run.result.output.receipt);
    assert.equal(receipt.status, 201, run.result.output.receipt);
    assert.deepEqual(JSON.parse(receipt.body), { payment: 'pay_1', booked: true });
    const list = (await api.get(`/api/runs/${runId}/approvals`)).body.data;
    assert.deepEqual(list.map((a: any) => [a.id, a.status]), [[approvalId, 'approved']]);
    // a little later still: the woken run's ending made no second call
    await sleep(500);
    assert.equal(ledgerCalls.length, 1);
  });

  test('rejected while parked: the woken run tells the model of the refusal, which ends the run by its own choice', async () => {
    upstream.calls.length = 0;
    const { runId, approvalId } = await aParkedRun('@acme/parker');
    const rejected = await api.post(`/api/runs/${runId}/approvals/${approvalId}`, { decision: 'reject', reason: 'not Oslo today' });
    assert.equal(rejected.status, 200, rejected.text);
    const { run } = await endOf(runId);
    assert.equal(run.status, 'success', JSON.stringify(run));
    assert.match(run.result.output.forecast, /rejected.*not Oslo today/);
    assert.deepEqual(upstream.calls, []);
  });

  test('expired while parked: the woken run tells the model the call was not approved in time', async () => {
    upstream.calls.length = 0;
    const { runId, approvalId } = await aParkedRun('@acme/brief-parker');
    const { run } = await endOf(runId);
    assert.equal(run.status, 'success', JSON.stringify(run));
    assert.match(run.result.output.forecast, /not approved in time.*No decision was made within 8 seconds/);
    const request = (await api.get(`/api/runs/${runId}/approvals`)).body.data[0];
    assert.deepEqual([request.id, request.status], [approvalId, 'expired']);
    assert.deepEqual(upstream.calls, []);
  });

  test('the platform and its engine killed while a run is parked: after the restart, the decision wakes it and it succeeds', async () => {
    upstream.calls.length = 0;
    const { runId, approvalId } = await aParkedRun('@acme/parker');
    await platform.kill('SIGKILL');
    // nothing of the platform remains: neither its engine nor a sandbox
    const deadline = Date.now() + 10_000;
    while (processesNaming(platform.dataDir).length > 0 && Date.now() < deadline) await sleep(100);
    assert.deepEqual(processesNaming(platform.dataDir), []);
    assert.deepEqual(sandboxProcesses(), []);
    await platform.restart();
    const approved = await api.post(`/api/runs/${runId}/approvals/${approvalId}`, { decision: 'approve' });
    assert.equal(approved.status, 200, approved.text);
    const run = await waitForStatus(api, runId, (s) => s !== 'pending' && s !== 'running', 90_000);
    assert.equal(run.status, 'success', JSON.stringify(run));
    assert.deepEqual(run.result.output, { forecast: 'Sunny in Oslo' });
    assert.deepEqual(upstream.calls, ['Oslo']);
  });
});
