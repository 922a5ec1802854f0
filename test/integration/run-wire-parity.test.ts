// The run resource has two writers: runWireWithSettings() (toRunWire() and the run's model settings)
// for a run still in memory (the launch answer) and PostgreSQL's run_wire() for every read. Both
// must write the same document, whatever the row holds.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { RUN_COLUMNS, type RunRow } from '../../api/services/runs/records.ts';
import { runWireWithSettings } from '../../api/services/runs/model-settings.ts';
import { newId } from '../../lib/ids.ts';
import { anOrg, type BuiltOrg } from '../support/builders.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
let pool: pg.Pool;
let org: BuiltOrg;

before(async () => {
  db = await freshDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  org = await anOrg(pool);
});
after(async () => {
  await pool.end();
  await db.drop();
});

async function aRun(fields: Record<string, unknown>): Promise<string> {
  const row: Record<string, unknown> = {
    id: newId('run'), org_id: org.orgId, space_id: org.spaceId, agent_id: '@acme/bot', agent_version: '1.2.3',
    trigger_kind: 'api_key', actor_user_id: org.ownerId, api_key_id: 'key_x', timeout_seconds: 120, event_secret: 'sealed',
    sink_expires_at: new Date(Date.now() + 3_600_000).toISOString(), ...fields,
  };
  const cols = Object.keys(row);
  await pool.query(
    `INSERT INTO runs (${cols.join(', ')}) SELECT ${cols.join(', ')} FROM jsonb_populate_record(NULL::runs, $1::jsonb)`,
    [JSON.stringify(row)],
  );
  return row.id as string;
}

async function bothWires(id: string): Promise<{ js: unknown; sql: unknown }> {
  const { rows } = await pool.query<RunRow & { model_settings: unknown; wire: string }>(`SELECT ${RUN_COLUMNS}, model_settings, run_wire(runs)::text AS wire FROM runs WHERE id = $1`, [id]);
  return { js: JSON.parse(JSON.stringify(runWireWithSettings(rows[0]))), sql: JSON.parse(rows[0].wire) };
}

const cases: Array<[string, Record<string, unknown>]> = [
  ['a pending run, just launched', { status: 'pending', input: { message: 'hi', nested: { list: [1, 'two', null] } } }],
  ['a run with no input', { status: 'pending', input: null }],
  ['a running run', { status: 'running', started_at: '2026-11-24T10:00:00.123456Z' }],
  ['a successful run with output, tokens and a cost', {
    status: 'success', input: { n: 1.5 }, output: { answer: 'forty-two', ok: true, score: 0.25 },
    created_at: '2026-11-24T09:59:59.999999Z', started_at: '2026-11-24T10:00:00.000500Z', finished_at: '2026-11-24T10:00:01.999999Z',
    prompt_tokens: 1234, completion_tokens: 56, cost_usd: 0.00125,
  }],
  ['a successful run whose output is null', { status: 'success', output: null, started_at: '2026-01-01T00:00:00Z', finished_at: '2026-01-01T00:00:00Z' }],
  ['a failed run with an error and details', {
    status: 'failed', error: { code: 'output_invalid', message: 'Does not match', details: [{ field: 'output.x', code: 'required' }] },
    started_at: '2026-11-24T10:00:00.001Z', finished_at: '2026-11-24T10:00:00.010Z',
  }],
  ['a run cancelled before it started', { status: 'cancelled', error: { code: 'run_cancelled', message: 'Cancelled on request.' }, finished_at: '2026-11-24T10:00:00Z' }],
  ['a run of an end-user, rerun of another, from a schedule', {
    status: 'timeout', trigger_kind: 'end_user', end_user_id: 'eu_1', api_key_id: null, schedule_id: 'sched_1', rerun_of: 'run_0', model_id: 'mdl_1', kind: 'inline',
    input: { text: 'quotes " and \\ backslashes, unicode é ✓, and a newline\n' },
  }],
  ['a run resumed from another', { status: 'running', resumed_from: 'run_failed_0', started_at: '2026-11-24T10:00:00Z' }],
  ['a run with its own model settings', { status: 'pending', model_id: 'mdl_1', model_settings: { temperature: 0.25, reasoning_effort: null } }],
];

for (const [name, fields] of cases) {
  test(`run_wire() and runWireWithSettings() agree: ${name}`, async () => {
    const { js, sql } = await bothWires(await aRun(fields));
    assert.deepStrictEqual(sql, js);
  });
}
