// Two endings of one run raced against the real finalize SQL from separate connections: exactly one
// wins, and the stored ending is the winner's. A third connection holds the run's row until both
// updates are queued behind it, so the race is real on every attempt, not left to scheduling.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { finalizeRun, type RunEndingRecord } from '../../db/run-finalization.ts';
import { reconcileAbandonedRuns } from '../../api/services/runs/reconciler.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';

let world: RunWorld;
let app: RunWorld['app'];
let api: RunWorld['api'];
let url: string;

before(async () => {
  world = await aRunWorld();
  ({ app, api } = world);
  url = app.deps.config.DATABASE_URL as string;
});
after(() => world.close());

async function aPendingRun(): Promise<string> {
  const run = await api.post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'race' } });
  assert.equal(run.status, 201, run.text);
  return run.body.id;
}

/** Runs `contenders` while a third connection holds the run's row, then lets them race for it. */
async function race(runId: string, contenders: Array<(pool: pg.Pool) => Promise<{ finalized: boolean }>>): Promise<boolean[]> {
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  const pools = contenders.map(() => new pg.Pool({ connectionString: url, max: 1 }));
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [runId]);
    const results = contenders.map((c, i) => c(pools[i]));
    // Both updates must be waiting on the held row before it is released.
    for (let i = 0; ; i++) {
      // asked from outside the holder's transaction, whose view of pg_stat_activity is a snapshot
      const { rows } = await app.deps.database.pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE runs SET status%'`,
      );
      if (rows[0].n >= contenders.length) break;
      assert.ok(i < 200, 'the contenders never queued on the row lock');
      await new Promise((r) => setTimeout(r, 25));
    }
    await holder.query('COMMIT');
    return (await Promise.all(results)).map((r) => r.finalized);
  } finally {
    await holder.end();
    await Promise.all(pools.map((p) => p.end()));
  }
}

const success: RunEndingRecord = { status: 'success', output: { winner: 'success' } };
const cancelled: RunEndingRecord = { status: 'cancelled', error: { code: 'cancelled', message: 'cancelled by the racer' } };

test('a success and a cancel raced from two connections: exactly one is recorded, and it is the one stored', async () => {
  for (let attempt = 0; attempt < 3; attempt++) {
    const runId = await aPendingRun();
    const won = await race(runId, [(p) => finalizeRun(p, runId, success), (p) => finalizeRun(p, runId, cancelled)]);
    assert.equal(won.filter(Boolean).length, 1, `attempt ${attempt}: winners ${JSON.stringify(won)}`);
    const { rows } = await app.deps.database.pool.query('SELECT status, output, error FROM runs WHERE id = $1', [runId]);
    if (won[0]) {
      assert.equal(rows[0].status, 'success');
      assert.deepEqual(rows[0].output, { winner: 'success' });
      assert.equal(rows[0].error, null);
    } else {
      assert.equal(rows[0].status, 'cancelled');
      assert.equal(rows[0].output, null);
      assert.equal(rows[0].error.code, 'cancelled');
    }
  }
});

test('the same ending raced three ways is still recorded once, and one run_status announcement is made', async () => {
  const runId = await aPendingRun();
  const listener = new pg.Client({ connectionString: url });
  await listener.connect();
  const heard: string[] = [];
  listener.on('notification', (n) => {
    if (n.channel === 'run_status' && JSON.parse(n.payload ?? '{}').id === runId) heard.push(n.payload!);
  });
  await listener.query('LISTEN run_status');
  try {
    const won = await race(runId, [0, 1, 2].map(() => (p: pg.Pool) => finalizeRun(p, runId, success)));
    assert.equal(won.filter(Boolean).length, 1, JSON.stringify(won));
    // A sentinel announcement after the race: once it is heard, every earlier one has been too.
    await app.deps.database.pool.query(`SELECT pg_notify('run_status', json_build_object('id', $1::text, 'sentinel', true)::text)`, [runId]);
    for (let i = 0; !heard.some((h) => JSON.parse(h).sentinel); i++) {
      assert.ok(i < 200, 'the sentinel announcement never arrived');
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(heard.filter((h) => !JSON.parse(h).sentinel).length, 1, heard.join('\n'));
  } finally {
    await listener.end();
  }
});

test('an ended run is never changed by a later ending, by the reconciler, or by a racing cancel', async () => {
  const runId = await aPendingRun();
  assert.deepEqual(await finalizeRun(app.deps.database.pool, runId, success), { finalized: true });
  assert.deepEqual(await finalizeRun(app.deps.database.pool, runId, cancelled), { finalized: false });
  // Age the run past every deadline: the reconciler's own query must still leave an ended run alone.
  await app.deps.database.pool.query(`UPDATE runs SET created_at = now() - interval '2 days' WHERE id = $1`, [runId]);
  assert.ok(!(await reconcileAbandonedRuns(app.deps.database.pool, 1)).includes(runId));
  const { rows } = await app.deps.database.pool.query('SELECT status, output FROM runs WHERE id = $1', [runId]);
  assert.equal(rows[0].status, 'success');
  assert.deepEqual(rows[0].output, { winner: 'success' });
});

test('the reconciler and a runner ending raced: one wins, the other changes nothing', async () => {
  const runId = await aPendingRun();
  await app.deps.database.pool.query(`UPDATE runs SET created_at = now() - interval '2 days' WHERE id = $1`, [runId]);
  const won = await race(runId, [
    async (p) => ({ finalized: (await reconcileAbandonedRuns(p, 1)).includes(runId) }),
    (p) => finalizeRun(p, runId, success),
  ]);
  assert.equal(won.filter(Boolean).length, 1, JSON.stringify(won));
  const { rows } = await app.deps.database.pool.query('SELECT status, error FROM runs WHERE id = $1', [runId]);
  assert.equal(rows[0].status, won[0] ? 'failed' : 'success');
  if (won[0]) assert.equal(rows[0].error.code, 'run_abandoned');
});

test('a boot deadline never ends a run whose first event was accepted; a pending one it ends', async () => {
  const bootTimeout: RunEndingRecord = { status: 'failed', error: { code: 'boot_timeout', message: 'The sandbox sent no event within 10 s of booting.' } };
  const started = await aPendingRun();
  // the first event, recorded as the runner route records it
  await app.deps.database.pool.query(`SELECT outcome FROM record_run_event($1, 'msg_first', 1, 'started', '{}'::jsonb)`, [started]);
  assert.deepEqual(await finalizeRun(app.deps.database.pool, started, bootTimeout, ['pending']), { finalized: false });
  const pending = await aPendingRun();
  assert.deepEqual(await finalizeRun(app.deps.database.pool, pending, bootTimeout, ['pending']), { finalized: true });
  const { rows } = await app.deps.database.pool.query('SELECT id, status FROM runs WHERE id = ANY($1) ORDER BY id = $2 DESC', [[started, pending], started]);
  assert.deepEqual(rows.map((r) => r.status), ['running', 'failed']);
});
