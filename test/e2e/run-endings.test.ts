// How runs end on a really started platform: no output (after one corrective re-prompt), an
// output that fails the schema, the timeout clamped to the ceiling, a cancel while running, an
// inline run, and a remote run reporting through its sink.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import type { FakeModel } from '../fixtures/fake-model/server.ts';
import { call, http2Status } from '../support/http.ts';
import type { PlatformProcess } from '../support/platform-process.ts';
import { anEndingsWorld, ECHO, type EndingsWorld } from './endings-world.ts';

let w: EndingsWorld;
let platform: PlatformProcess;
let fake: FakeModel;
let api: EndingsWorld['api'];
let models: Record<string, string>;
let runToEnd: EndingsWorld['runToEnd'];

before(async () => {
  w = await anEndingsWorld({ SANDBOX_WARM_POOL: '2' });
  ({ platform, fake, api, models, runToEnd } = w);
});
after(() => w?.close());

describe('endings', () => {
  test('a model that never calls output: re-prompted once, then failed no_output', async () => {
    const before = fake.requests.filter((r) => r.model === 'fake-text').length;
    const run = await runToEnd(ECHO, { input: { message: 'x' }, model_id: models['fake-text'] });
    assert.equal(run.status, 'failed');
    assert.equal(run.error.code, 'no_output');
    assert.ok(fake.requests.filter((r) => r.model === 'fake-text').length - before >= 2, 'the agent re-prompted once');
  });

  test('an output that fails the output schema: failed output_invalid with the validation errors', async () => {
    const run = await runToEnd(ECHO, { input: { message: 'x' }, model_id: models['fake-bad-output'] });
    assert.equal(run.status, 'failed');
    assert.equal(run.error.code, 'output_invalid');
    assert.ok(Array.isArray(run.error.details) && run.error.details.length > 0);
    assert.ok(run.error.details.some((e: any) => e.field.startsWith('output')));
  });

  test('the agent timeout is clamped to the ceiling: status timeout, run_timeout', async () => {
    const started = Date.now();
    const run = await runToEnd(ECHO, { input: { message: 'x' }, model_id: models['fake-hang'] });
    assert.equal(run.timeout_seconds, 4);
    assert.equal(run.status, 'timeout');
    assert.equal(run.error.code, 'run_timeout');
    assert.ok(Date.now() - started < 30_000);
  });

  test('a cancel while running ends the run and tears its sandbox down', async () => {
    const launched = (await api.post(ECHO, { input: { message: 'x' }, model_id: models['fake-hang'] })).body;
    await w.running(launched.id);
    const cancelled = await api.post(`/api/runs/${launched.id}/cancel`, { reason: 'changed my mind' });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.status, 'cancelled');
    // The sandbox's folder goes with it.
    const deadline = Date.now() + 15_000;
    let left = -1;
    while (Date.now() < deadline) {
      left = Number(execFileSync('sh', ['-c', `ls ${platform.dataDir}/sandboxes 2>/dev/null | wc -l`], { encoding: 'utf8' }).trim());
      const warm = Number(execFileSync('sh', ['-c', `ps -o args= --ppid ${platform.proc.pid} | grep -c dist/sidecar.cjs || true`], { encoding: 'utf8' }).trim());
      if (warm <= 2 && left <= 2) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    assert.ok(left <= 2, `sandbox folders left: ${left}`);
  });
});

describe('only the platform can signal a run', () => {
  test('a terminal signal sent straight to the engine ingress without the platform MAC is refused', async () => {
    const launched = (await api.post(ECHO, { input: { message: 'x' }, model_id: models['fake-hang'] })).body;
    await w.running(launched.id);
    const ports = JSON.parse(fs.readFileSync(path.join(platform.dataDir, 'ports.json'), 'utf8'));
    const forged = await fetch(`http://127.0.0.1:${ports.restateIngress}/run/${launched.id}/terminal`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'success', output: { echo: 'forged' } }),
    });
    assert.ok(!forged.ok, `the engine accepted a forged signal: ${forged.status}`);
    const badMac = await fetch(`http://127.0.0.1:${ports.restateIngress}/run/${launched.id}/terminal`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'success', output: { echo: 'forged' }, mac: 'AAAA' }),
    });
    assert.ok(!badMac.ok);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await api.get(`/api/runs/${launched.id}`)).body.status, 'running');
    assert.equal((await api.post(`/api/runs/${launched.id}/cancel`, {})).body.status, 'cancelled');
  });
});

/** The status the platform's workflow endpoint answers a caller that is not Restate with. */
function endpointStatus(method: string, urlPath: string, headers: Record<string, string> = {}): Promise<number> {
  const ports = JSON.parse(fs.readFileSync(path.join(platform.dataDir, 'ports.json'), 'utf8'));
  return http2Status(`http://127.0.0.1:${ports.worker}`, method, urlPath, headers);
}

describe('the workflow endpoint', () => {
  test("answers only requests Restate signed with the platform's key (kept 0600 in the data directory)", async () => {
    assert.equal(await endpointStatus('GET', '/discover', { accept: 'application/vnd.restate.endpointmanifest.v1+json' }), 401);
    assert.equal(await endpointStatus('POST', '/invoke/run/terminal', { 'content-type': 'application/vnd.restate.invocation.v1', 'x-restate-signature-scheme': 'v1', 'x-restate-jwt-v1': 'e30.e30.AAAA' }), 401);
    assert.equal(fs.statSync(path.join(platform.dataDir, 'restate-identity.pem')).mode & 0o777, 0o600);
    // and Restate's own calls pass: the runs of this file ran through it
  });
});

describe('runs of other kinds', () => {
  test('an inline run succeeds with its output checked against its inline output schema', async () => {
    const run = await runToEnd('/api/runs/inline', {
      manifest: {
        name: '@inline/summary', version: '1.0.0', type: 'agent', schema_version: '0.3',
        output: { schema: { type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'] } },
        runtime_tools: ['output'],
      },
      prompt: 'Summarize the input and call output.',
      input: { text: 'a long text' },
    });
    assert.equal(run.status, 'success', JSON.stringify(run.error));
    assert.equal(typeof run.result.output.summary, 'string');
  });

  test('a remote run ends when its runner reports completion through the sink', async () => {
    const created = await api.post('/api/runs/remote', { packageId: '@fixtures/agent-echo', input: { message: 'remote' } });
    assert.equal(created.status, 201, created.text);
    const { events_url: url, secret } = created.body.sink;
    let seq = 0;
    const post = async (type: string, data: Record<string, unknown>) => {
      const raw = JSON.stringify({ sequence: ++seq, type, at: new Date().toISOString(), data });
      const res = await call(platform.url, 'POST', new URL(url).pathname, { rawBody: raw, headers: { 'content-type': 'application/json', ...signedRunEventHeaders(secret, raw) } });
      assert.equal(res.status, 204, res.text);
    };
    await post('started', {});
    await post('output', { output: { echo: 'from elsewhere' } });
    await post('completed', { text: 'done' });
    const done = await api.get(`/api/runs/${created.body.id}?wait=20`);
    assert.equal(done.body.status, 'success', JSON.stringify(done.body.error));
    assert.deepEqual(done.body.result.output, { echo: 'from elsewhere' });
  });
});
