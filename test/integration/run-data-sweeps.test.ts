// The run-data sweeps: replay records (run_event_ids) go once a run's sink no longer accepts
// events (the run ended or its sink expired) and stay while it does; run logs go after
// RUN_LOG_RETENTION_DAYS, facts pinned to memory and younger lines kept; both in batches, so a
// backlog larger than one batch is cleared by one sweep.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { sweepReplayRecords, sweepRunData, sweepRunLogs } from '../../api/services/runs/retention.ts';
import { loadConfig } from '../../lib/config.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { seedRuns, seedSpaces, type SeededSpace } from '../support/scale-seed.ts';

let app: TestApp;
let pool: pg.Pool;
let space: SeededSpace;

async function aRun(id: string, status: string, sinkExpiresIn: string): Promise<void> {
  await pool.query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at)
     VALUES ($1, $2, $3, '@seed/agent-0', '1.0.0', $4, 'member', $5, 300, 'sealed', now() + $6::interval)`,
    [id, space.orgId, space.spaceId, status, space.ownerId, sinkExpiresIn],
  );
  await pool.query(`INSERT INTO run_event_ids (run_id, message_id) SELECT $1, 'msg_' || k FROM generate_series(1, 3) k`, [id]);
}

const recordsOf = async (id: string) => (await pool.query('SELECT count(*)::int AS n FROM run_event_ids WHERE run_id = $1', [id])).rows[0].n as number;

before(async () => {
  app = await startTestApp();
  pool = app.deps.database.pool;
  [space] = await seedSpaces(pool, 1, 1);
  // 1,500 ended runs (one in a thousand still running, its sink long expired) with two records each
  await seedRuns(pool, space, 1500, { eventIds: 2 });
});
after(() => app?.close());

test('replay records of ended runs and expired sinks are deleted, those of open sinks kept', async () => {
  await aRun('run_open_sink', 'running', '10 minutes');
  await aRun('run_pending_sink', 'pending', '10 minutes');
  await aRun('run_expired_sink', 'running', '-1 second');
  await aRun('run_just_ended', 'success', '10 minutes');
  assert.equal(await recordsOf('run_just_ended'), 3);

  const deleted = await sweepReplayRecords(pool);
  assert.equal(deleted, 1500 * 2 + 3 + 3, 'every record of a closed or expired sink, across batches');
  const { rows } = await pool.query(
    `SELECT count(*)::int AS n FROM run_event_ids e JOIN runs r ON r.id = e.run_id
      WHERE r.status IN ('success', 'failed', 'timeout', 'cancelled') OR r.sink_expires_at <= now()`,
  );
  assert.equal(rows[0].n, 0, 'no record is left for a closed or expired sink');
  assert.equal(await recordsOf('run_open_sink'), 3);
  assert.equal(await recordsOf('run_pending_sink'), 3);
  assert.equal(await sweepReplayRecords(pool), 0, 'a second sweep finds nothing');
});

test('run logs older than the retention are deleted, pinned facts and younger lines kept', async () => {
  await pool.query(`UPDATE run_logs SET created_at = now() - interval '100 days' WHERE run_id IN (SELECT id FROM runs WHERE org_id = $1 LIMIT 1200)`, [space.orgId]);
  const { rows: pinned } = await pool.query(
    `UPDATE run_logs SET data = '{"kind": "pin"}' WHERE (run_id, sequence) IN
       (SELECT run_id, sequence FROM run_logs WHERE created_at < now() - interval '99 days' LIMIT 5) RETURNING run_id`,
  );
  assert.equal(pinned.length, 5);
  const before = (await pool.query('SELECT count(*)::int AS n FROM run_logs')).rows[0].n as number;

  assert.equal(await sweepRunLogs(pool, 0), 0, '0 keeps every log');
  assert.equal(await sweepRunLogs(pool, 90), 1200 - 5);
  const { rows } = await pool.query(`SELECT count(*)::int AS n, count(*) FILTER (WHERE data->>'kind' = 'pin')::int AS pins FROM run_logs`);
  assert.equal(rows[0].n, before - 1195);
  assert.equal(rows[0].pins, 5, 'pinned facts stay: they are the agent memory');
});

test('the host sweep runs every sweep with the configured retention; RUN_LOG_RETENTION_DAYS defaults to 90', async () => {
  const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgres://x@127.0.0.1/x' });
  assert.equal(config.RUN_LOG_RETENTION_DAYS, 90);
  assert.equal(loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgres://x@127.0.0.1/x', RUN_LOG_RETENTION_DAYS: '0' }).RUN_LOG_RETENTION_DAYS, 0);
  await pool.query(`UPDATE run_logs SET created_at = now() - interval '40 days' WHERE data IS NULL`);
  await aRun('run_later_ended', 'cancelled', '10 minutes');
  const done = await sweepRunData(pool, { inlineRetentionDays: 30, logRetentionDays: 30 });
  assert.deepEqual(done, { inline_runs_purged: 0, replay_records_deleted: 3, run_logs_deleted: 1500 - 1200 });
});
