// Realtime streams at scale on one instance: SUBSCRIBERS (default 2,000) concurrent space streams
// on a real platform process; for each of ROUNDS run status changes, the delay from the change
// (the UPDATE that commits it, timed from just before it is sent) to each subscriber's receipt of
// its run_update frame; and the platform's resident memory per idle subscriber.
// Targets (issue 15): p99 under 100 ms, under 20 KB per idle subscriber.
import fs from 'node:fs';
import http from 'node:http';
import pg from 'pg';
import { aKey, anOrg } from '../test/support/builders.ts';
import { emit, freshBenchDatabase, note, round, spread, startPlatformChild } from './support.ts';

const SUBSCRIBERS = Number(process.env.SUBSCRIBERS ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 20);

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]);
}

interface Subscriber {
  /** receipt time of each run's run_update */
  seen: Map<string, number>;
  ready: Promise<void>;
  destroy(): void;
}

function subscribe(url: string, key: string, agent: http.Agent): Subscriber {
  const seen = new Map<string, number>();
  let req: http.ClientRequest;
  const ready = new Promise<void>((resolve, reject) => {
    req = http.get(url, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`stream answered ${res.statusCode}`));
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const at = performance.now();
        buf += chunk;
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, end);
          buf = buf.slice(end + 2);
          if (frame.includes('event: ping')) resolve();
          if (frame.includes('event: run_update')) seen.set(JSON.parse(frame.slice(frame.indexOf('data: ') + 6)).id, at);
        }
      });
    });
    req.on('error', reject);
  });
  return { seen, ready, destroy: () => req.destroy() };
}

async function main(): Promise<void> {
  const db = await freshBenchDatabase();
  const platform = await startPlatformChild({
    env: { DATABASE_URL: db.url, SANDBOX_WARM_POOL: '0', LOG_LEVEL: 'warn' },
    readyTimeoutMs: 120_000,
  }).catch(async (err) => {
    await db.drop();
    throw err;
  });
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const subs: Subscriber[] = [];
  try {
    const org = await anOrg(pool);
    const { key } = await aKey(pool, { ...org, userId: org.ownerId });
    const pid = platform.proc.pid!;
    // warm the route once, then measure memory with no stream open
    const warm = subscribe(`${platform.url}/api/realtime/runs`, key, new http.Agent());
    await warm.ready;
    warm.destroy();
    await new Promise((r) => setTimeout(r, 500));
    const rssBefore = rssKb(pid);

    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    note(`opening ${SUBSCRIBERS} streams`);
    for (let i = 0; i < SUBSCRIBERS; i += 200) {
      const batch = Array.from({ length: Math.min(200, SUBSCRIBERS - i) }, () => subscribe(`${platform.url}/api/realtime/runs`, key, agent));
      subs.push(...batch);
      await Promise.all(batch.map((s) => s.ready));
    }
    await new Promise((r) => setTimeout(r, 1000));
    const rssIdle = rssKb(pid);
    note(`streams open; RSS ${rssBefore} KB -> ${rssIdle} KB`);

    // each round: a new run's status changes (pending -> running); the run id names the round
    const delays: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const runId = `run_bench_${r}`;
      await pool.query(
        `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at)
         VALUES ($1, $2, $3, '@bench/agent', '1.0.0', 'pending', 'member', $4, 60, 'x', now() + interval '1 hour')`,
        [runId, org.orgId, org.spaceId, org.ownerId],
      );
      const sent = performance.now();
      await pool.query(`UPDATE runs SET status = 'running', started_at = now() WHERE id = $1`, [runId]);
      const started = performance.now();
      while (subs.some((s) => !s.seen.has(runId))) {
        if (performance.now() - started > 30_000) throw new Error(`round ${r}: not every subscriber received the change`);
        await new Promise((res) => setTimeout(res, 5));
      }
      for (const s of subs) delays.push(s.seen.get(runId)! - sent);
      await new Promise((res) => setTimeout(res, 100));
    }
    const d = spread(delays);
    emit({
      subscribers: SUBSCRIBERS,
      rounds: ROUNDS,
      receipts: delays.length,
      delay_ms: { p50: d.p50, p99: d.p99, max: d.max, mean: d.mean },
      rss_kb: { before: rssBefore, with_idle_streams: rssIdle },
      rss_per_idle_subscriber_kb: round((rssIdle - rssBefore) / SUBSCRIBERS, 2),
      targets: { p99_ms: 100, per_subscriber_kb: 20 },
    });
  } finally {
    for (const s of subs) s.destroy();
    await pool.end();
    await platform.dispose();
    await db.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
