// With Redis configured, realtime events travel over Redis pub/sub: a log entry published on one
// API instance reaches a stream held by another instance of the same database, while run status
// changes still come from the database's own announcement.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { listen } from '../support/sse.ts';

let first: TestApp;
let second: TestApp;

before(async () => {
  first = await startTestApp({ redis: true });
  second = await startTestApp({ redis: true, databaseUrl: first.deps.database.url });
});
after(async () => {
  await second.close();
  await first.close();
});

test('a log entry published on one instance reaches a stream on the other through Redis', async () => {
  const pool = first.deps.database.pool;
  const org = await anOrg(pool);
  const { key } = await aKey(pool, { ...org, userId: org.ownerId });
  const runId = `run_redis_${Date.now()}`;
  const s = listen(`${second.url}/api/realtime/runs?token=${key}&verbose=true`);
  try {
    await s.count('ping', 1);
    await pool.query(
      `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at)
       VALUES ($1, $2, $3, '@acme/bot', '1.0.0', 'pending', 'member', $4, 60, $5, now() + interval '1 hour')`,
      [runId, org.orgId, org.spaceId, org.ownerId, first.deps.secrets.seal(newRunEventSecret())],
    );
    await pool.query(`UPDATE runs SET status = 'running', started_at = now() WHERE id = $1`, [runId]);
    const big = 'y'.repeat(20_000);
    await first.deps.realtime!.publish({ kind: 'run_log', spaceId: org.spaceId, runId, entry: { sequence: 1, level: 'info', message: 'over redis', data: { big }, createdAt: new Date().toISOString() } });
    await s.count('run_log', 1);
    await s.count('run_update', 1);
    assert.equal(s.of('run_log')[0].data.message, 'over redis');
    assert.equal(s.of('run_log')[0].data.data.big, big, 'Redis carries large payloads inline');
    assert.deepEqual(s.of('run_update').map((f) => f.data.status), ['running']);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM realtime_payloads');
    assert.equal(rows[0].n, 0, 'nothing went through PostgreSQL');
  } finally {
    s.close();
  }
});
