// Builders for the process sandbox adapter tests: a run spec aimed at a signed-event receiver and
// the fake model, and readings of the sandbox's processes from /proc.
import { readFileSync } from 'node:fs';
import type { SandboxSpec } from '../../activities/sandbox/adapter.ts';
import { processTree } from '../../activities/sandbox/cgroup.ts';

export const MODEL_KEY = 'sk-sandbox-test-provider-key-0123456789';

export const outputSchema = {
  type: 'object',
  properties: { summary: { type: 'string', minLength: 3 }, count: { type: 'integer', minimum: 1 } },
  required: ['summary', 'count'],
  additionalProperties: false,
};

export function aSandboxSpec(opts: {
  runId?: string;
  eventsBaseUrl: string;
  secret: string;
  modelUrl: string;
  input?: unknown;
  memoryMb?: number;
}): SandboxSpec {
  const runId = opts.runId ?? 'run_sandbox_test';
  const input = opts.input ?? { summary: 'three apples', count: 3 };
  return {
    runId,
    workspace: [
      { path: 'prompt.md', content: Buffer.from('Summarize the input and count its items.') },
      { path: 'input.json', content: Buffer.from(JSON.stringify(input)) },
      { path: 'skills/counting/SKILL.md', content: Buffer.from('---\nname: counting\ndescription: How to count\n---\nCount.\n') },
    ],
    sidecar: {
      runId,
      eventsUrl: `${opts.eventsBaseUrl}/internal/runs/${runId}/events`,
      eventSecret: opts.secret,
      model: { baseUrl: opts.modelUrl, apiKey: MODEL_KEY, model: 'fake' },
      egressAllowInternalHosts: [new URL(opts.modelUrl).host],
      outputSchema,
      runtimeTools: ['output', 'log'],
      heartbeatSeconds: 60,
      integrations: [],
    },
    limits: { memoryMb: opts.memoryMb ?? 1536, cpus: 2 },
  };
}

export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // a zombie still answers signal 0
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

export function environOf(pid: number): Record<string, string> {
  return Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

export function commandOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}

/** The node process of an agent: the spawned one, or the one bubblewrap runs inside. */
export async function agentNodePid(agentPid: number): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    for (const pid of await processTree(agentPid)) {
      try {
        if (commandOf(pid).some((arg) => /dist\/agent-runtime\.(cjs|[0-9a-f]+\.blob)$/.test(arg)) && !commandOf(pid)[0].endsWith('bwrap')) return pid;
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no agent-runtime node process under ${agentPid}`);
}

export interface MemoryReading {
  /** VmRSS: counts the node binary's pages, which every node process on the host shares */
  rssKb: number;
  /** RssAnon: the process's own memory */
  anonKb: number;
  /** Pss: own memory plus a fair share of the shared pages */
  pssKb: number;
}

export function memoryOf(pid: number): MemoryReading {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const field = (re: RegExp, text: string) => Number(re.exec(text)?.[1] ?? 0);
    return { rssKb: field(/VmRSS:\s+(\d+) kB/, status), anonKb: field(/RssAnon:\s+(\d+) kB/, status), pssKb: field(/^Pss:\s+(\d+) kB/m, rollup) };
  } catch {
    return { rssKb: 0, anonKb: 0, pssKb: 0 };
  }
}

/** Samples the summed memory of the given process trees; keeps the peak of each sum. */
export function samplePeakMemory(roots: number[], everyMs = 20): { peak(): MemoryReading; stop(): void } {
  const peak: MemoryReading = { rssKb: 0, anonKb: 0, pssKb: 0 };
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    const sum: MemoryReading = { rssKb: 0, anonKb: 0, pssKb: 0 };
    for (const root of roots) {
      for (const pid of await processTree(root)) {
        const m = memoryOf(pid);
        sum.rssKb += m.rssKb;
        sum.anonKb += m.anonKb;
        sum.pssKb += m.pssKb;
      }
    }
    peak.rssKb = Math.max(peak.rssKb, sum.rssKb);
    peak.anonKb = Math.max(peak.anonKb, sum.anonKb);
    peak.pssKb = Math.max(peak.pssKb, sum.pssKb);
    busy = false;
  }, everyMs);
  // a test that fails before stop() must not keep its file running
  timer.unref();
  return { peak: () => ({ ...peak }), stop: () => clearInterval(timer) };
}

export function mib(kb: number): string {
  return (kb / 1024).toFixed(1);
}
