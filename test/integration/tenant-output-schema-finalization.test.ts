// Finalization checks a run's output against the stored output schema; a stored schema the
// platform cannot evaluate safely (a version that predates the pattern check) fails the run with
// output_invalid instead of answering the runner with an error or skipping the check.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { call } from '../support/http.ts';
import { aRunWorld, importPackage, type RunWorld } from '../support/runs.ts';
import { agentFiles, zip } from './packages-harness.ts';

let world: RunWorld;
let app: RunWorld['app'];
let api: RunWorld['api'];

before(async () => {
  world = await aRunWorld({ fixture: null });
  ({ app, api } = world);
  const output = { schema: { type: 'object', properties: { code: { type: 'string', pattern: '^[a-z]+$' } }, required: ['code'] } };
  await importPackage(app.url, world.key, zip(agentFiles('@acme/legacy-output', '1.0.0', { output, runtime_tools: ['output'] })));
});
after(() => world.close());

let seq = 0;
function send(runId: string, secret: string, event: Record<string, unknown>) {
  const raw = JSON.stringify({ sequence: ++seq, at: new Date().toISOString(), ...event });
  return call(app.url, 'POST', `/internal/runs/${runId}/events`, { rawBody: raw, headers: { 'content-type': 'application/json', ...signedRunEventHeaders(secret, raw) } });
}

test('an output checked against a stored schema with a backreference fails the run with output_invalid', async () => {
  const run = await api.post('/api/agents/@acme/legacy-output/run', { input: {} });
  assert.equal(run.status, 201, run.text);
  const pool = app.deps.database.pool;
  const { rows } = await pool.query('SELECT event_secret FROM runs WHERE id = $1', [run.body.id]);
  const secret = app.deps.secrets.open(rows[0].event_secret);
  // as a version imported before patterns were checked would be stored
  await pool.query(
    `UPDATE package_versions SET manifest = jsonb_set(manifest, '{output,schema,properties,code,pattern}', to_jsonb('^(a)\\1$'::text))
      WHERE package_id = '@acme/legacy-output'`,
  );
  assert.equal((await send(run.body.id, secret, { type: 'started' })).status, 204);
  assert.equal((await send(run.body.id, secret, { type: 'output', data: { output: { code: 'aa' } } })).status, 204);
  const done = await send(run.body.id, secret, { type: 'completed', data: {} });
  assert.equal(done.status, 204, done.text);
  const read = await api.get(`/api/runs/${run.body.id}`);
  assert.equal(read.body.status, 'failed');
  assert.equal(read.body.error.code, 'output_invalid');
  assert.match(read.body.error.message, /output schema cannot be evaluated: .*\/properties\/code\/pattern: pattern "\^\(a\)\\\\1\$" uses a backreference/);
});
