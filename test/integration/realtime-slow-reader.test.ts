// Rule 3: a client that stops reading is dropped once about 2,000 frames wait for it, while the
// clients that read keep up and receive everything in order; what was queued for the dropped
// client is released (the process's heap gives back what the queue held).
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { MAX_QUEUED_FRAMES } from '../../api/services/realtime/stream.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg, type BuiltOrg } from '../support/builders.ts';
import { listen, type Listener } from '../support/sse.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

let app: TestApp;
let org: BuiltOrg;
let key: string;
const runId = 'run_slowreader';

before(async () => {
  app = await startTestApp();
  const pool = app.deps.database.pool;
  org = await anOrg(pool);
  ({ key } = await aKey(pool, { ...org, userId: org.ownerId }));
  await pool.query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at)
     VALUES ($1, $2, $3, '@acme/bot', '1.0.0', 'running', 'member', $4, 60, $5, now() + interval '1 hour')`,
    [runId, org.orgId, org.spaceId, org.ownerId, app.deps.secrets.seal(newRunEventSecret())],
  );
});
after(() => app.close());

function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

test('a reader that stops reading is dropped at about 2,000 queued frames; the others get every frame; memory returns', { timeout: 240_000 }, async () => {
  const hub = app.deps.realtime!;
  const path = `/api/realtime/runs?verbose=true&channels=run_log`;
  const slim = (d: any) => ({ sequence: d.sequence, size: d.data?.blob?.length });
  const fast: Listener[] = [0, 1].map(() => listen(`${app.url}${path}`, { authorization: `Bearer ${key}` }, slim));
  try {
    for (const l of fast) await l.count('ping', 1);

    // the slow reader takes the response, then never reads again
    let slowClosed = false;
    let slow: http.IncomingMessage | undefined;
    const slowGone = new Promise<void>((resolve) => {
      const req = http.get(`${app.url}${path}`, { headers: { authorization: `Bearer ${key}` } }, (res) => {
        slow = res;
        res.pause();
        res.socket.pause();
        const done = () => {
          slowClosed = true;
          resolve();
        };
        res.once('close', done);
        res.once('aborted', done);
        res.once('error', done);
      });
      req.on('error', () => {
        slowClosed = true;
        resolve();
      });
    });
    while (hub.stats().streams < 3) await new Promise((r) => setTimeout(r, 10));
    let heapAtPeak = 0;

    const blob = 'x'.repeat(6000);
    let sent = 0;
    let peakQueued = 0;
    while (hub.stats().dropped === 0) {
      assert.ok(sent < 30_000, `no drop after ${sent} frames`);
      sent++;
      await hub.publish({ kind: 'run_log', spaceId: org.spaceId, runId, entry: { sequence: sent, level: 'info', message: `entry ${sent}`, data: { blob }, createdAt: new Date().toISOString() } });
      peakQueued = Math.max(peakQueued, hub.stats().queuedFrames);
      if (!heapAtPeak && peakQueued >= MAX_QUEUED_FRAMES - 20) heapAtPeak = heapAfterGc();
    }
    // reading again, the client finds the end of what the server sent before it cut the connection
    slow!.socket.resume();
    slow!.resume();
    await slowGone;
    assert.ok(slowClosed, 'the slow reader was disconnected');
    assert.equal(hub.stats().dropped, 1);
    assert.ok(peakQueued >= MAX_QUEUED_FRAMES - 50 && peakQueued <= MAX_QUEUED_FRAMES, `dropped at ${peakQueued} queued frames`);

    // every frame reached the readers, in order
    for (const l of fast) {
      await l.count('run_log', sent, 120_000);
      assert.deepEqual(l.of('run_log').map((f) => f.data.sequence), Array.from({ length: sent }, (_, i) => i + 1));
      assert.ok(l.of('run_log').every((f) => f.data.size === 6000), 'whole entries');
    }
    assert.equal(hub.stats().streams, 2);
    assert.equal(hub.stats().queuedFrames, 0);
    const afterwards = heapAfterGc();
    // ~2,000 frames of ~6 KB (about 12 MB) waited for the slow reader; dropping it released them
    assert.ok(heapAtPeak - afterwards > 8 * 1024 * 1024, `heap at the peak ${Math.round(heapAtPeak / 1024)} KB, afterwards ${Math.round(afterwards / 1024)} KB`);
  } finally {
    for (const l of fast) l.close();
  }
});
