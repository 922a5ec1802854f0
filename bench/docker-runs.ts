// The docker run backend beside the process backend, in the same run, at the adapter (no API, no
// engine: the sandbox's own cost): start() -> the sidecar's `started` event (launch -> running) and
// -> `completed` (launch -> success), p50/p99 over sequential runs, then sustained runs/s with two
// runs in flight. The docker backend is measured twice: without a warm pool (every start cold)
// and with one of two pairs (as the process backend's), counting the starts the pool served. The
// model is the scripted fake on loopback (no latency), the events go to a signed receiver on
// loopback. Needs a docker engine (docker/build-images.sh builds the images).
//   npm run bench -- docker-runs          BENCH_DOCKER_RUNS=8 BENCH_DOCKER_SUSTAINED=8
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxAdapter } from '../activities/sandbox/adapter.ts';
import { createDockerAdapter } from '../activities/sandbox/docker-adapter.ts';
import { createProcessAdapter } from '../activities/sandbox/process-adapter.ts';
import { newRunEventSecret } from '../lib/run-events.ts';
import { startFakeModel } from '../test/fixtures/fake-model/server.ts';
import { AGENT_IMAGE, dockerForTests, SIDECAR_IMAGE } from '../test/support/docker.ts';
import { aSandboxSpec } from '../test/integration/sandbox-process-harness.ts';
import { startEventReceiver, waitUntil } from '../test/integration/sidecar-run-harness.ts';
import { emit, note, round, spread } from './support.ts';

const RUNS = Number(process.env.BENCH_DOCKER_RUNS ?? 8);
const SUSTAINED = Number(process.env.BENCH_DOCKER_SUSTAINED ?? 8);

const why = await dockerForTests();
if (why) {
  emit({ benchmark: 'docker-runs', skipped: why });
  process.exit(0);
}
const secret = newRunEventSecret();
const model = await startFakeModel({});
const receiver = await startEventReceiver(secret);
let serial = 0;

/** one run: answers ms from start() to its started and completed events */
async function oneRun(adapter: SandboxAdapter, backend: string): Promise<{ runningMs: number; successMs: number }> {
  const runId = `run_bench_${backend}_${++serial}`;
  // a post may carry a batch of events (the start and the end together): each is looked for in every post's events
  const arrived = (type: string) => receiver.deliveries.find((d) => d.path.includes(`/runs/${runId}/`) && d.status < 300 && (d.events ?? []).some((e) => e.type === type));
  const t0 = performance.now();
  const { sandboxId } = await adapter.start(aSandboxSpec({ runId, eventsBaseUrl: receiver.url, secret, modelUrl: model.url, memoryMb: 512 }));
  await waitUntil(() => arrived('completed') !== undefined, 60_000);
  // the receiver stamps each accepted event on arrival
  const at = (type: string) => receiver.arrivedAtMs[receiver.events.indexOf(arrived(type)!.events!.find((e) => e.type === type)!)] - t0;
  const figures = { runningMs: at('started'), successMs: at('completed') };
  await adapter.stop(sandboxId);
  return figures;
}

/** the docker adapter's phases of each cold start (its debug line): where launch -> running goes */
const startPhases: Array<Record<string, number>> = [];
let pooledStarts = 0;
const phaseLog = {
  debug(msg: string, fields?: Record<string, unknown>) {
    if (msg !== 'docker sandbox started' || !fields) return;
    if (fields.pooled === true) {
      pooledStarts++;
      return;
    }
    startPhases.push(Object.fromEntries(Object.entries(fields).filter(([k, v]) => k.endsWith('_ms') && typeof v === 'number')) as Record<string, number>);
  },
  info() {}, warn() {}, error() {},
};

/** p50 of each phase over the sequential runs */
function phaseMedians(): Record<string, number> {
  const names = Object.keys(startPhases[0] ?? {});
  return Object.fromEntries(names.map((n) => [n, spread(startPhases.map((p) => p[n])).p50]));
}

async function measure(backend: 'process' | 'docker' | 'docker-pooled'): Promise<object> {
  const workDir = await mkdtemp(join(tmpdir(), `bench-${backend}-`));
  const adapter =
    backend === 'process'
      ? await createProcessAdapter({ workDir, warmPool: 2, poolMemoryMb: 512 })
      : await createDockerAdapter({
        workDir, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE, log: phaseLog,
        ...(backend === 'docker-pooled' ? { warmPool: 2, poolMemoryMb: 512, poolCpus: 2 } : {}),
      });
  try {
    await ('whenWarm' in adapter ? adapter.whenWarm() : undefined);
    await oneRun(adapter, backend); // warm-up: code caches, page cache
    await ('whenWarm' in adapter ? adapter.whenWarm() : undefined);
    startPhases.length = 0;
    pooledStarts = 0;
    const running: number[] = [];
    const success: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const r = await oneRun(adapter, backend);
      running.push(r.runningMs);
      success.push(r.successMs);
    }
    note(`${backend}: ${RUNS} sequential runs done`);
    const phases = backend === 'docker' ? { start_phases_p50_ms: phaseMedians() } : {};
    const pooledSequential = pooledStarts;
    pooledStarts = 0;
    const t0 = performance.now();
    let next = 0;
    await Promise.all([0, 1].map(async () => {
      while (next < SUSTAINED) {
        next++;
        await oneRun(adapter, backend);
      }
    }));
    const seconds = (performance.now() - t0) / 1000;
    const served = backend === 'docker-pooled' ? { pool_served: { sequential: `${pooledSequential}/${RUNS}`, sustained: `${pooledStarts}/${SUSTAINED}` } } : {};
    return {
      launch_to_running_ms: spread(running), launch_to_success_ms: spread(success), ...phases, ...served,
      sustained: { runs: SUSTAINED, in_flight: 2, seconds: round(seconds, 2), runs_per_s: round(SUSTAINED / seconds, 2) },
    };
  } finally {
    await adapter.close();
    await rm(workDir, { recursive: true, force: true });
  }
}

try {
  const processFigures = await measure('process');
  const dockerFigures = await measure('docker');
  const pooledFigures = await measure('docker-pooled');
  emit({ benchmark: 'docker-runs', runs: RUNS, process: processFigures, docker: dockerFigures, docker_pooled: pooledFigures });
} finally {
  await receiver.close();
  await model.close();
}
