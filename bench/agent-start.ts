// The agent runtime's start, from spawn to its ready line: today's start (the bundle compiled
// through its V8 code cache, bin/cached-program.ts) against a start from its V8 startup snapshot
// (activities/sandbox/startup-snapshot.ts), beside a bare node printing a line, interleaved in
// one run (one of each per round, the order rotating) so that the machine's load falls on all alike.
// Each process is measured unconfined (the node process alone; bubblewrap's own cost is the same
// for either start): its CPU time on the cores (/proc/<pid>/schedstat, nanoseconds) and the
// wall time when its first line arrives, the process then idle waiting for its assignment; and
// its memory then (Pss). The sandbox's flags are the process backend's for a 1536 MB run.
// Then, where GNU time is at /usr/bin/time, the agent's CPU over a whole trivial run (the
// platform's rehearsal run: a scripted model, a log call, an output call, a final answer, with the
// sidecar), code cache against snapshot, interleaved: what a run saves once the code the snapshot
// does not hold (compiled lazily as the run goes) is paid for. GNU time counts in 10 ms ticks.
//   node --import tsx bench/agent-start.ts [rounds] [whole-run rounds]     (20 and 10 by default)
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
// @ts-expect-error: a plain ESM script without type declarations
import { ensureBundle } from '../bin/start.mjs';
import { bundleKeyedFile, cachedPairArgv } from '../activities/sandbox/code-cache.ts';
import { sandboxNodePath } from '../activities/sandbox/confinement.ts';
import { rehearsePair } from '../activities/sandbox/rehearsal.ts';
import { agentHeapMb, SIDECAR_HEAP_MB } from '../activities/sandbox/sandbox-pair.ts';
import { agentSnapshotArgv } from '../activities/sandbox/startup-snapshot.ts';
import { emit, note, ROOT, round } from './support.ts';

const ROUNDS = Number(process.argv[2] ?? 20);
const RUN_ROUNDS = Number(process.argv[3] ?? 10);
const GNU_TIME = '/usr/bin/time';
const MEMORY_MB = 1536;
// as activities/sandbox/sandbox-pair.ts starts the agent
const AGENT_FLAGS = [`--max-old-space-size=${agentHeapMb(MEMORY_MB)}`, '--max-semi-space-size=1'];
const SIDECAR_FLAGS = [`--max-old-space-size=${SIDECAR_HEAP_MB}`, '--max-semi-space-size=1'];
const BARE = ['-e', "process.stdout.write('{\"ready\":true}\\n'); process.stdin.resume(); process.stdin.on('end', () => process.exit(0))"];
const LINE_TIMEOUT_MS = 60_000;

interface Sample {
  cpuMs: number;
  wallMs: number;
  pssKb: number;
}

function cpuNs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
}

function pssKb(pid: number): number {
  return Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
}

/** Starts `node args`, waits for its first stdout line, measures, then closes its stdin and waits for it to end. */
function measure(node: string, args: string[], expect: (line: Record<string, unknown>) => boolean): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const began = performance.now();
    const child = spawn(node, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let sample: Sample | undefined;
    const timer = setTimeout(() => child.kill('SIGKILL'), LINE_TIMEOUT_MS);
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.on('data', (d) => {
      stdout += d;
      if (sample || !stdout.includes('\n')) return;
      const wallMs = performance.now() - began;
      try {
        sample = { wallMs, cpuMs: cpuNs(child.pid!) / 1e6, pssKb: pssKb(child.pid!) };
      } catch (err) {
        reject(err);
        return;
      }
      const line = JSON.parse(stdout.slice(0, stdout.indexOf('\n')));
      if (!expect(line)) reject(new Error(`unexpected ready line ${JSON.stringify(line)}`));
      child.stdin.end();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (sample && code === 0) resolve(sample);
      else reject(new Error(`exited ${code} before a ready line: ${stderr.slice(-1000)}`));
    });
  });
}

function stats(samples: number[]): { mean: number; p50: number; p90: number; min: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length, 2), p50: round(at(0.5), 2), p90: round(at(0.9), 2), min: round(sorted[0], 2), max: round(sorted.at(-1)!, 2) };
}

async function main(): Promise<void> {
  await ensureBundle();
  const node = sandboxNodePath();
  // the code caches (one rehearsal run) and the snapshot, as a sandbox's first start makes them
  await cachedPairArgv(ROOT, node, { sidecar: SIDECAR_FLAGS, agent: AGENT_FLAGS });
  const snapshot = await agentSnapshotArgv(ROOT, node, AGENT_FLAGS);
  if (!snapshot) throw new Error('the startup snapshot could not be built');
  const cacheFile = bundleKeyedFile(ROOT, node, AGENT_FLAGS, 'agent-runtime', 'cache');
  const variants: Array<{ name: string; args: string[]; expect: (line: Record<string, unknown>) => boolean }> = [
    { name: 'node_bare', args: BARE, expect: (l) => l.ready === true },
    { name: 'code_cache', args: [...AGENT_FLAGS, path.join(ROOT, 'dist', 'cached-program.cjs'), path.join(ROOT, 'dist', 'agent-runtime.cjs'), cacheFile], expect: (l) => l.ready === true && l.snapshot === undefined },
    { name: 'snapshot', args: snapshot, expect: (l) => l.ready === true && l.snapshot === true },
  ];
  const samples = new Map<string, Sample[]>(variants.map((v) => [v.name, []]));
  // one warm-up of each (page cache), not counted
  for (const v of variants) await measure(node, v.args, v.expect);
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < variants.length; i++) {
      const v = variants[(round + i) % variants.length];
      samples.get(v.name)!.push(await measure(node, v.args, v.expect));
    }
    if ((round + 1) % 5 === 0) note(`agent-start: ${round + 1}/${ROUNDS} rounds`);
  }
  const summary = (name: string) => {
    const s = samples.get(name)!;
    return { cpu_ms: stats(s.map((x) => x.cpuMs)), wall_ms: stats(s.map((x) => x.wallMs)), pss_mb_at_ready: stats(s.map((x) => x.pssKb / 1024)) };
  };
  const result = Object.fromEntries(variants.map((v) => [v.name, summary(v.name)]));
  const wholeRun = existsSync(GNU_TIME) && RUN_ROUNDS > 0 ? await wholeRunCpu(node, variants[1].args, snapshot) : null;
  const ratio = (a: string, b: string, key: 'cpu_ms' | 'wall_ms') => round(result[a][key].mean / result[b][key].mean, 2);
  emit({
    benchmark: 'agent-start',
    rounds: ROUNDS,
    node: process.version,
    flags: AGENT_FLAGS,
    measured: 'spawn to the first stdout line (the ready line), unconfined node process; cpu from /proc/<pid>/schedstat',
    ...result,
    ratios: {
      snapshot_to_code_cache_cpu: ratio('snapshot', 'code_cache', 'cpu_ms'),
      snapshot_to_code_cache_wall: ratio('snapshot', 'code_cache', 'wall_ms'),
      snapshot_to_node_bare_cpu: ratio('snapshot', 'node_bare', 'cpu_ms'),
      code_cache_to_node_bare_cpu: ratio('code_cache', 'node_bare', 'cpu_ms'),
    },
    agent_whole_run_cpu_ms: wholeRun ?? `not measured (no ${GNU_TIME})`,
  });
}

/** The agent's CPU (user + system, GNU time) over a whole rehearsal run, for each start, interleaved. */
async function wholeRunCpu(node: string, codeCache: string[], snapshot: string[]): Promise<Record<string, ReturnType<typeof stats> | number>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-start-bench-'));
  try {
    const sidecar = [...SIDECAR_FLAGS, path.join(ROOT, 'dist', 'cached-program.cjs'), path.join(ROOT, 'dist', 'sidecar.cjs'), bundleKeyedFile(ROOT, node, SIDECAR_FLAGS, 'sidecar', 'cache')];
    const starts = { code_cache: codeCache, snapshot };
    const cpu: Record<string, number[]> = { code_cache: [], snapshot: [] };
    for (let r = 0; r < RUN_ROUNDS; r++) {
      const order = r % 2 === 0 ? (['code_cache', 'snapshot'] as const) : (['snapshot', 'code_cache'] as const);
      for (const name of order) {
        const out = path.join(dir, `${name}.time`);
        rmSync(out, { force: true });
        // both programs under GNU time, so that rehearsePair's one binary starts either
        await rehearsePair(GNU_TIME, {
          sidecar: ['-f', '%U %S', '-o', path.join(dir, 'sidecar.time'), node, ...sidecar],
          agent: ['-f', '%U %S', '-o', out, node, ...starts[name]],
        });
        const [user, system] = readFileSync(out, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
        cpu[name].push((user + system) * 1000);
      }
      note(`agent-start: whole run ${r + 1}/${RUN_ROUNDS}`);
    }
    const codeCacheStats = stats(cpu.code_cache);
    const snapshotStats = stats(cpu.snapshot);
    return { code_cache: codeCacheStats, snapshot: snapshotStats, snapshot_to_code_cache: round(snapshotStats.mean / codeCacheStats.mean, 2) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
