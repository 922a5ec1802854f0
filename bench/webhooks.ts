// Webhook delivery benchmark. Prints one JSON object: deliveries per second to a local receiver
// (runs ended as fast as the database takes them, one webhook each; from the first ending to the
// last delivery received) and the delay from a run's ending (its finished_at) to its delivery at
// the receiver, p50/p99, with runs ending one at a time (and, as delay_under_bulk_ms, during the
// throughput phase, queueing included). Every delivery is verified with the
// standardwebhooks library before it counts.
// Targets: >= 500 deliveries/s and p99 < 200 ms.
// The platform is the real process (`node bin/start.mjs platform`, embedded Restate, ROLE=all);
// the receiver is an HTTP server in this process on 127.0.0.1.
//   node --import tsx bench/webhooks.ts
import http from 'node:http';
import os from 'node:os';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { finalizeRun } from '../db/run-finalization.ts';
import { newRunEventSecret } from '../lib/run-events.ts';
import { aKey, anOrg } from '../test/support/builders.ts';
import { emit, freePort, freshBenchDatabase, note, round, spread, startPlatformChild } from './support.ts';

const THROUGHPUT_RUNS = Number(process.env.BENCH_WEBHOOK_RUNS ?? 2000);
const LATENCY_RUNS = 100;
const TARGETS = { deliveries_per_sec: 500, delay_p99_ms: 200 };

async function main(): Promise<void> {
  const receiverPort = await freePort();
  const db = await freshBenchDatabase();
  const platform = await startPlatformChild({ env: { DATABASE_URL: db.url, SANDBOX_WARM_POOL: '0', EGRESS_ALLOW_INTERNAL_HOSTS: `127.0.0.1:${receiverPort}` } });
  const pool = new pg.Pool({ connectionString: db.url, max: 16 });
  const arrivals = new Map<string, number>();
  let rejected = 0;
  let verifier: Webhook | null = null;
  const waiters: Array<() => void> = [];
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const raw = Buffer.concat(chunks).toString('utf8');
      try {
        const body = verifier!.verify(raw, req.headers as Record<string, string>) as { data: { id: string; finished_at: string } };
        if (!arrivals.has(body.data.id)) arrivals.set(body.data.id, at - Date.parse(body.data.finished_at));
        res.writeHead(204).end();
      } catch {
        rejected++;
        res.writeHead(401).end();
      }
      for (const w of waiters.splice(0)) w();
    });
  });
  receiver.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => receiver.listen(receiverPort, '127.0.0.1', () => r()));
  const arrived = async (n: number) => {
    const deadline = Date.now() + 300_000;
    while (arrivals.size < n) {
      if (Date.now() > deadline) throw new Error(`only ${arrivals.size} of ${n} deliveries arrived`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 200);
      });
    }
  };

  try {
    const org = await anOrg(pool);
    const { key } = await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
    const res = await fetch(`${platform.url}/api/webhooks`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ level: 'space', spaceId: org.spaceId, url: `http://127.0.0.1:${receiverPort}/hook`, events: ['run.success'] }),
    });
    const hook = (await res.json()) as { secret: string };
    if (res.status !== 201) throw new Error(`webhook: ${res.status} ${JSON.stringify(hook)}`);
    verifier = new Webhook(hook.secret);
    const secret = newRunEventSecret();
    const runs = async (n: number, tag: string) => {
      const ids = Array.from({ length: n }, (_, i) => `run_bench${tag}${i}`);
      await pool.query(
        `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, timeout_seconds, event_secret, sink_expires_at, started_at)
         SELECT id, $2, $3, '@bench/bot', '1.0.0', 'running', 'api_key', 60, $4, now() + interval '1 hour', now() FROM unnest($1::text[]) AS id`,
        [ids, org.orgId, org.spaceId, secret],
      );
      return ids;
    };

    // warm-up: the first deliveries pay for connections and the engine's first invocations
    const warm = await runs(50, 'w');
    await Promise.all(warm.map((id) => finalizeRun(pool, id, { status: 'success', output: null })));
    await arrived(warm.length);

    // delay: one ending at a time, the next once the last was delivered (no queue of our making)
    const latencyIds = await runs(LATENCY_RUNS, 'l');
    for (let i = 0; i < latencyIds.length; i++) {
      await finalizeRun(pool, latencyIds[i], { status: 'success', output: null });
      await arrived(warm.length + i + 1);
    }
    const delays = latencyIds.map((id) => arrivals.get(id)!);

    // throughput: every run ends at once
    const bulk = await runs(THROUGHPUT_RUNS, 't');
    const before = arrivals.size;
    const t0 = performance.now();
    for (let i = 0; i < bulk.length; i += 16) await Promise.all(bulk.slice(i, i + 16).map((id) => finalizeRun(pool, id, { status: 'success', output: null })));
    const endedMs = performance.now() - t0;
    await arrived(before + bulk.length);
    const seconds = (performance.now() - t0) / 1000;
    const bulkDelays = bulk.map((id) => arrivals.get(id)!);

    const result = {
      benchmark: 'webhooks',
      targets: TARGETS,
      deliveries: bulk.length,
      deliveries_per_sec: round(bulk.length / seconds),
      endings_per_sec: round(bulk.length / (endedMs / 1000)),
      delay_ms: spread(delays),
      delay_under_bulk_ms: spread(bulkDelays),
      rejected_signatures: rejected,
      meets_targets: bulk.length / seconds >= TARGETS.deliveries_per_sec && spread(delays).p99 < TARGETS.delay_p99_ms,
      machine: { cpus: os.cpus().length, load_average: os.loadavg().map((x) => round(x, 2)) },
    };
    note(`webhooks: ${result.deliveries_per_sec} deliveries/s, delay p50 ${result.delay_ms.p50} ms p99 ${result.delay_ms.p99} ms`);
    emit(result);
  } finally {
    receiver.closeAllConnections();
    receiver.close();
    await pool.end();
    await platform.stop();
    await db.drop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
