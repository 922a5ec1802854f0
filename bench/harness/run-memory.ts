// One run's sandbox memory, sampled while it runs (the runs benchmark's memory phase), and the
// benchmark's shared handles.
import type pg from 'pg';
import { memoryOf, sandboxesOf, type ProcessMemory } from './process-stats.ts';
import { launchRun, type KeyRing, type RunTracker } from './run-traffic.ts';
import { round, type PlatformChild } from '../support.ts';

export interface Bench {
  platform: PlatformChild;
  pool: pg.Pool;
  tracker: RunTracker;
  keys: KeyRing;
  readKey: string;
  spaceId: string;
  dbName: string;
}

const RUN_END_TIMEOUT_MS = 120_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function sum(list: ProcessMemory[]) {
  return { rss_mb: round(list.reduce((s, p) => s + p.rss_mb, 0)), pss_mb: round(list.reduce((s, p) => s + p.pss_mb, 0)) };
}

/** The process backend's long-lived sidecar host (a sidecar in no sandbox folder: it serves them all), if one runs. */
function sidecarHostOf(pid: number): number[] {
  return sandboxesOf(pid).find((s) => s.sidecar.length && !s.agent.length)?.sidecar ?? [];
}

const memoryOfAll = (pids: number[]) => pids.map(memoryOf).filter((m): m is ProcessMemory => m !== null);

/**
 * One run on a slow model (so it lasts seconds), its sandbox's memory sampled every 100 ms. With a
 * shared sidecar host the run's sidecar share is what the host grew by while serving it (its Pss
 * at the run's peak less its Pss before), the host's whole reading beside it.
 */
export async function runMemory(b: Bench, slowModelId: string, targetMb: number) {
  const pid = b.platform.proc.pid!;
  const waiting = sandboxesOf(pid).find((s) => !s.assigned && s.agent.length);
  const waitingPair = waiting ? sum(memoryOfAll([...waiting.sidecar, ...waiting.agent])) : null;
  const hostBefore = sum(memoryOfAll(sidecarHostOf(pid)));
  let hostPeak = hostBefore;
  const l = await launchRun(b.platform.url, await b.keys.next(), slowModelId);
  if (l.status !== 201) throw new Error(`memory run: launch answered ${l.status} ${l.code}`);
  let peak: { sidecar: ProcessMemory[]; agent: ProcessMemory[]; total: { rss_mb: number; pss_mb: number }; at_ms: number } | null = null;
  let samples = 0;
  const done = b.tracker.ended(l.id!, RUN_END_TIMEOUT_MS);
  let finished = false;
  void done.then(() => (finished = true));
  while (!finished) {
    const host = memoryOfAll(sidecarHostOf(pid));
    const hostNow = sum(host);
    if (hostNow.pss_mb > hostPeak.pss_mb) hostPeak = hostNow;
    for (const s of sandboxesOf(pid).filter((x) => x.assigned && x.agent.length)) {
      const agent = memoryOfAll(s.agent);
      // a sidecar of the run's own, else the shared host's growth (as a pseudo process)
      const sidecar = s.sidecar.length ? memoryOfAll(s.sidecar) : host.length ? [{
        pid: host[0].pid, command: 'sidecar host (growth since before the run)',
        rss_mb: Math.max(0, hostNow.rss_mb - hostBefore.rss_mb), pss_mb: Math.max(0, hostNow.pss_mb - hostBefore.pss_mb),
      }] : [];
      const total = sum([...sidecar, ...agent]);
      samples += 1;
      if (!peak || total.rss_mb > peak.total.rss_mb) peak = { sidecar, agent, total, at_ms: Date.now() - l.at };
    }
    await sleep(100);
  }
  const t = await done;
  if (!peak) throw new Error('memory run: no assigned sandbox was seen');
  const round2 = (m: ProcessMemory) => ({ ...m, rss_mb: round(m.rss_mb), pss_mb: round(m.pss_mb) });
  return {
    run_status: t.status, run_ms: t.ended! - l.at, samples,
    peak_at_ms: peak.at_ms,
    sidecar: sum(peak.sidecar), agent: sum(peak.agent), total: peak.total,
    processes: [...peak.sidecar, ...peak.agent].map(round2),
    waiting_pair_before_the_run: waitingPair,
    sidecar_host: hostBefore.rss_mb > 0 ? { before_the_run: hostBefore, peak: hostPeak } : null,
    target_mb: targetMb,
    // Rss counts the node binary and libraries shared with every other node process; Pss shares them out
    meets_target_rss: peak.total.rss_mb < targetMb, meets_target_pss: peak.total.pss_mb < targetMb,
  };
}
