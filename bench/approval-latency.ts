// Approval latency (issue 33): on a real platform process (embedded engine, process sandboxes),
// BENCH_RUNS (default 5) runs, one after another, of a scripted-model agent whose one integration
// call needs approval. For each: wait until its request is pending, hold 5 s (BENCH_HOLD_SECONDS)
// while reading its sandbox's processes (sidecar and agent runtime, found under the platform in
// /proc: Rss at the end of the hold, CPU seconds spent during it), approve, and time from the
// decision's 200 answer to the upstream (an MCP server in this process, same clock) receiving the
// call. Prints p50/max of that latency and the held sandbox's figures.
// Runs alternate between a decision made while the run still holds its sandbox (before
// RUN_PARK_AFTER_SECONDS, BENCH_PARK_AFTER_SECONDS here, default 4) and one made once it is parked
// (its state checkpointed, its sandbox stopped): for a parked run the hold reads whatever sandbox
// processes remain (aim: none; only its stored checkpoint, whose size is reported) and the latency
// includes booting a fresh sandbox from the checkpoint.
// Aims (issue 33): <= 1 s from decision to call on a quiet machine; a parked run holds no process.
//   node --import tsx bench/approval-latency.ts
import pg from 'pg';
import { writeZip } from '../lib/zip/write-zip.ts';
import { startWeatherUpstream, type WeatherUpstream } from '../test/support/approval-agent.ts';
import { aKey, anOrg } from '../test/support/builders.ts';
import { startFakeModel } from '../test/fixtures/fake-model/server.ts';
import { cpuOf, memoryOf, sandboxesOf } from './harness/process-stats.ts';
import { emit, freshBenchDatabase, loadAverage, median, note, round, send, spread, startPlatformChild } from './support.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 6);
const PARK_AFTER_SECONDS = Number(process.env.BENCH_PARK_AFTER_SECONDS ?? 4);
// the held run's hold ends before it would park
const HOLD_SECONDS = Math.min(Number(process.env.BENCH_HOLD_SECONDS ?? 2), PARK_AFTER_SECONDS - 1);
const AIM_MS = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** performance.now() of each upstream call, in order. */
const upstreamCalls: number[] = [];
let onCall: (() => void) | null = null;
let upstream: WeatherUpstream;

function archive(manifest: Record<string, unknown>, files: Record<string, string> = {}): Buffer {
  const entries = new Map<string, Buffer>([['manifest.json', Buffer.from(JSON.stringify(manifest))]]);
  for (const [p, c] of Object.entries(files)) entries.set(p, Buffer.from(c));
  return writeZip(entries);
}

async function importArchive(base: string, key: string, zip: Buffer): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob([zip]), 'package.afps');
  const res = await fetch(`${base}/api/packages/import`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const text = await res.text();
  if (res.status !== 201 && res.status !== 200) throw new Error(`import: ${res.status} ${text.slice(0, 300)}`);
}

/** Sum of Rss and Pss (MB) and CPU seconds of the given processes; gone ones count nothing. */
function measure(pids: number[]): { rss_mb: number; pss_mb: number; cpu_s: number } {
  let rss = 0;
  let pss = 0;
  let cpu = 0;
  for (const pid of pids) {
    const m = memoryOf(pid);
    rss += m?.rss_mb ?? 0;
    pss += m?.pss_mb ?? 0;
    cpu += cpuOf(pid)?.own ?? 0;
  }
  return { rss_mb: rss, pss_mb: pss, cpu_s: cpu };
}

interface Hold {
  mode: 'held' | 'parked';
  checkpoint_bytes?: number;
  sandboxes: number;
  processes: number;
  sidecar: { rss_mb: number; pss_mb: number; cpu_s: number };
  runtime: { rss_mb: number; pss_mb: number; cpu_s: number };
  rss_mb: number;
  pss_mb: number;
  cpu_s: number;
}

async function main(): Promise<void> {
  upstream = await startWeatherUpstream();
  upstream.onCall = () => {
    upstreamCalls.push(performance.now());
    onCall?.();
  };
  const upstreamUrl = upstream.url;
  const fake = await startFakeModel();
  const db = await freshBenchDatabase().catch(async (err) => {
    await fake.close();
    throw err;
  });
  const platform = await startPlatformChild({
    env: { DATABASE_URL: db.url, SANDBOX_WARM_POOL: '0', RUN_PARK_AFTER_SECONDS: String(PARK_AFTER_SECONDS), EGRESS_ALLOW_INTERNAL_HOSTS: [new URL(fake.url).host, new URL(upstreamUrl).host].join(',') },
    readyTimeoutMs: 180_000,
  }).catch(async (err) => {
    await db.drop();
    await fake.close();
    throw err;
  });
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    const org = await anOrg(pool);
    const { key } = await aKey(pool, { ...org, userId: org.ownerId });
    const auth = { authorization: `Bearer ${key}` };
    const api = (method: string, p: string, body?: unknown) => send(method, `${platform.url}${p}`, { headers: auth, body });
    const cred = await api('POST', '/api/model-provider-credentials', { provider: 'openai-compatible', name: 'fake', base_url: fake.url, api_key: 'sk-bench' });
    const model = await api('POST', '/api/models', { credential_id: cred.body.id, model: 'fake-script', name: 'fake-script', is_default: true });
    if (model.status !== 201) throw new Error(`model: ${model.status} ${JSON.stringify(model.body)}`);
    await importArchive(platform.url, key, archive({
      name: '@public/weather', version: '1.0.0', type: 'integration', schema_version: '0.3',
      source: { kind: 'remote', url: `${upstreamUrl}/mcp`, transport: 'streamable-http' }, default_tools: ['forecast'],
    }));
    const script = [{ tool: 'public_weather__forecast', arguments: { city: 'Oslo' } }, { tool: 'output', arguments: { forecast: '{{result:0}}' } }];
    await importArchive(platform.url, (await aKey(pool, { ...org, userId: org.ownerId })).key, archive({
      name: '@bench/approver', version: '1.0.0', type: 'agent', schema_version: '0.3',
      dependencies: { integrations: { '@public/weather': '*' } },
      integrations_configuration: { '@public/weather': { tools: ['forecast'] } },
      runtime_tools: ['output'],
      output: { schema: { type: 'object', properties: { forecast: { type: 'string' } }, required: ['forecast'] } },
      approvals: { tools: ['public_weather__forecast'] },
    }, { 'prompt.md': `Tell the forecast.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n` }));

    const platformPid = platform.proc.pid!;
    const latencies: Record<Hold['mode'], number[]> = { held: [], parked: [] };
    const fromSend: Record<Hold['mode'], number[]> = { held: [], parked: [] };
    const holds: Hold[] = [];
    for (let i = 0; i < RUNS; i++) {
      const mode: Hold['mode'] = i % 2 === 0 ? 'held' : 'parked';
      const launch = await api('POST', '/api/agents/@bench/approver/run', { input: {} });
      if (launch.status !== 201) throw new Error(`launch: ${launch.status} ${JSON.stringify(launch.body)}`);
      const runId: string = launch.body.id;
      const deadline = Date.now() + 120_000;
      let request: any;
      while (!request) {
        const list = await api('GET', `/api/runs/${runId}/approvals`);
        request = list.body?.data?.find((a: any) => a.status === 'pending');
        if (request) break;
        const run = (await api('GET', `/api/runs/${runId}`)).body;
        if (run.status !== 'pending' && run.status !== 'running') throw new Error(`run ${runId} ended before its approval request: ${JSON.stringify(run).slice(0, 500)}`);
        if (Date.now() > deadline) throw new Error(`no pending approval request of ${runId}`);
        await sleep(50);
      }
      const before = upstreamCalls.length;
      let checkpointBytes: number | undefined;
      if (mode === 'parked') {
        for (;;) {
          const run = (await api('GET', `/api/runs/${runId}`)).body;
          if (run.awaiting?.parked === true) break;
          if (run.status !== 'running' || Date.now() > deadline) throw new Error(`run ${runId} did not park: ${JSON.stringify(run).slice(0, 500)}`);
          await sleep(50);
        }
        const { rows } = await pool.query<{ bytes: number }>('SELECT bytes FROM run_checkpoints WHERE run_id = $1', [runId]);
        checkpointBytes = rows[0]?.bytes ?? 0;
      }

      // the run's sandbox (none once parked): its sidecar and agent runtime over the hold
      const held = sandboxesOf(platformPid).filter((s) => s.assigned);
      const sidecarPids = held.flatMap((s) => s.sidecar);
      const runtimePids = held.flatMap((s) => s.agent);
      const pids = [...sidecarPids, ...runtimePids];
      const startSidecar = measure(sidecarPids);
      const startRuntime = measure(runtimePids);
      await sleep(HOLD_SECONDS * 1000);
      const endSidecar = measure(sidecarPids);
      const endRuntime = measure(runtimePids);
      const part = (a: ReturnType<typeof measure>, b: ReturnType<typeof measure>) => ({ rss_mb: round(b.rss_mb), pss_mb: round(b.pss_mb), cpu_s: round(b.cpu_s - a.cpu_s, 2) });
      const sidecar = part(startSidecar, endSidecar);
      const runtime = part(startRuntime, endRuntime);
      const end = { rss_mb: endSidecar.rss_mb + endRuntime.rss_mb, cpu_s: endSidecar.cpu_s + endRuntime.cpu_s };
      const start = { cpu_s: startSidecar.cpu_s + startRuntime.cpu_s };
      holds.push({
        mode, ...(checkpointBytes !== undefined ? { checkpoint_bytes: checkpointBytes } : {}),
        sandboxes: held.length, processes: pids.length, sidecar, runtime,
        rss_mb: round(end.rss_mb), pss_mb: round(endSidecar.pss_mb + endRuntime.pss_mb), cpu_s: round(end.cpu_s - start.cpu_s, 2),
      });
      if (upstreamCalls.length !== before) throw new Error('the upstream was called before the decision');

      const called = new Promise<void>((resolve) => (onCall = resolve));
      const sent = performance.now();
      const decided = await api('POST', `/api/runs/${runId}/approvals/${request.id}`, { decision: 'approve' });
      const answered = performance.now();
      if (decided.status !== 200) throw new Error(`decision: ${decided.status} ${JSON.stringify(decided.body)}`);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([called, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('the upstream was not called within 60 s of the decision')), 60_000)))]);
      clearTimeout(timer);
      onCall = null;
      const at = upstreamCalls[before];
      latencies[mode].push(at - answered);
      fromSend[mode].push(at - sent);

      for (;;) {
        const run = (await api('GET', `/api/runs/${runId}`)).body;
        if (run.status === 'success') break;
        if (run.status !== 'pending' && run.status !== 'running') throw new Error(`run ${runId} ended ${run.status}: ${JSON.stringify(run).slice(0, 500)}`);
        if (Date.now() > deadline) throw new Error(`run ${runId} did not end`);
        await sleep(50);
      }
      note(`run ${i + 1}/${RUNS} (${mode}): decision answered -> upstream call ${round(at - answered)} ms; held ${pids.length} processes, ${round(end.rss_mb)} MB Rss, ${round(end.cpu_s - start.cpu_s, 2)} CPU-s over ${HOLD_SECONDS} s`);
    }

    const figures = (mode: Hold['mode']) => {
      const of = holds.filter((h) => h.mode === mode);
      const lat = spread(latencies[mode]);
      const cpu = of.map((h) => h.cpu_s);
      return {
        runs: of.length,
        decision_answered_to_upstream_call_ms: { p50: lat.p50, max: lat.max },
        decision_sent_to_upstream_call_ms: { p50: spread(fromSend[mode]).p50, max: spread(fromSend[mode]).max },
        while_waiting: {
          hold_seconds: HOLD_SECONDS,
          processes: { max: Math.max(0, ...of.map((h) => h.processes)) },
          sidecar_plus_runtime_rss_mb: { p50: spread(of.map((h) => h.rss_mb)).p50, max: spread(of.map((h) => h.rss_mb)).max },
          // Rss counts the node binary and libraries shared with every other node process; Pss shares them out
          sidecar_plus_runtime_pss_mb: { p50: spread(of.map((h) => h.pss_mb)).p50, max: spread(of.map((h) => h.pss_mb)).max },
          cpu_seconds_during_hold: { p50: round(median(cpu), 2), max: round(Math.max(0, ...cpu), 2) },
          ...(mode === 'parked' ? { checkpoint_bytes: { max: Math.max(0, ...of.map((h) => h.checkpoint_bytes ?? 0)) } } : {}),
        },
      };
    };
    const held = figures('held');
    const parked = figures('parked');
    emit({
      benchmark: 'approval-latency',
      runs: RUNS,
      park_after_seconds: PARK_AFTER_SECONDS,
      held,
      parked,
      per_run: holds,
      aims: { decision_to_call_ms: AIM_MS, parked_processes: 0 },
      met: {
        decision_to_call_held: held.decision_answered_to_upstream_call_ms.max <= AIM_MS,
        decision_to_call_parked: parked.decision_answered_to_upstream_call_ms.max <= AIM_MS,
        no_process_while_parked: holds.filter((h) => h.mode === 'parked').every((h) => h.processes === 0),
      },
      note: 'held: decided before the park delay, the sandbox still waits; parked: decided once the run was checkpointed and its sandbox stopped, so the latency includes booting a fresh sandbox and the agent making the held call.',
      load_average: loadAverage(),
    });
  } finally {
    onCall = null;
    await pool.end();
    await platform.dispose();
    await db.drop();
    await fake.close();
    await upstream?.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
