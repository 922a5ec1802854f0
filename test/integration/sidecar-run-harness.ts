// Builders for the sidecar and agent-runtime integration tests: a stand-in platform event
// receiver that verifies signatures, warm-pool process spawning, and run workspaces.
import { spawn, execFileSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { newRunEventSecret, verifyRunEventSignature, type RunEvent } from '../../lib/run-events.ts';
import { isProblem } from '../../lib/problem.ts';

/** the checkout these tests run from */
export const REPO = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');

export interface Delivery {
  path: string;
  method: string;
  webhookId: string;
  status: number;
  /** the post's first event (a lone event's own) */
  event?: RunEvent;
  /** every event the post carried: one, or a batch's in order */
  events?: RunEvent[];
  query: URLSearchParams;
}

export interface EventReceiver {
  url: string;
  /** events accepted (2xx), in arrival order */
  events: RunEvent[];
  /** performance.now() at the arrival of each accepted event */
  arrivedAtMs: number[];
  /** every signed request, whatever the answer */
  deliveries: Delivery[];
  close(): Promise<void>;
  waitFor(predicate: (events: RunEvent[]) => boolean, timeoutMs?: number): Promise<void>;
}

/**
 * answer: status for each event of a verified delivery (default 202; a batch gets its first event's
 * refusal, else 202); GET bodies: what the history/memory routes answer.
 */
export async function startEventReceiver(
  secret: string,
  opts: { answer?: (event: RunEvent, attempt: number) => number; getBody?: (path: string) => unknown } = {},
): Promise<EventReceiver> {
  const events: RunEvent[] = [];
  const arrivedAtMs: number[] = [];
  const deliveries: Delivery[] = [];
  const attempts = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      let webhookId: string;
      try {
        webhookId = verifyRunEventSignature(secret, headerRecord(req.headers), raw, Math.floor(Date.now() / 1000)).id;
      } catch (err) {
        res.writeHead(isProblem(err) ? err.status : 500).end(isProblem(err) ? err.code : 'error');
        deliveries.push({ path: url.pathname, method: req.method ?? '', webhookId: '', status: 401, query: url.searchParams });
        return;
      }
      if (req.method === 'GET') {
        deliveries.push({ path: url.pathname, method: 'GET', webhookId, status: 200, query: url.searchParams });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(opts.getBody?.(url.pathname) ?? []));
        return;
      }
      const posted = JSON.parse(raw.toString('utf8')) as RunEvent | { events: RunEvent[] };
      const batch = 'events' in posted && Array.isArray(posted.events) ? posted.events : [posted as RunEvent];
      const attempt = (attempts.get(webhookId) ?? 0) + 1;
      attempts.set(webhookId, attempt);
      const refusal = batch.map((e) => opts.answer?.(e, attempt) ?? 202).find((s) => s < 200 || s >= 300);
      const status = refusal ?? 202;
      deliveries.push({ path: url.pathname, method: 'POST', webhookId, status, event: batch[0], events: batch, query: url.searchParams });
      if (status >= 200 && status < 300) {
        const now = performance.now();
        for (const e of batch) {
          events.push(e);
          arrivedAtMs.push(now);
        }
      }
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    events,
    arrivedAtMs,
    deliveries,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    waitFor: (predicate, timeoutMs = 20_000) => waitUntil(() => predicate(events), timeoutMs),
  };
}

function headerRecord(headers: IncomingHttpHeaders): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = Array.isArray(v) ? v.join(' ') : v;
  return out;
}

export async function waitUntil(check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface WarmProcess {
  proc: ChildProcessWithoutNullStreams;
  ready: Record<string, unknown>;
  /** milliseconds from spawn to the ready line */
  readyMs: number;
  stderr(): string;
  assign(assignment: unknown): void;
  exited: Promise<number | null>;
  /** resident set size in KiB (ps -o rss), undefined once the process is gone */
  rssKb(): number | undefined;
  kill(): Promise<void>;
}

/** Spawns `node --import tsx <entry>` and waits for its {"ready":true...} line. */
export async function spawnWarm(entry: string, env: NodeJS.ProcessEnv = process.env): Promise<WarmProcess> {
  const started = performance.now();
  const proc = spawn(process.execPath, ['--import', 'tsx', entry], { cwd: REPO, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let out = '';
    const onData = (c: Buffer) => {
      out += c.toString();
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      proc.stdout.off('data', onData);
      resolve(JSON.parse(out.slice(0, nl)));
    };
    proc.stdout.on('data', onData);
    void exited.then((code) => reject(new Error(`${entry} exited (${code}) before ready: ${err}`)));
  });
  const readyMs = performance.now() - started;
  // keep draining stdout so the child never blocks on a full pipe
  proc.stdout.resume();
  return {
    proc,
    ready,
    readyMs,
    stderr: () => err,
    assign: (assignment) => proc.stdin.write(`${JSON.stringify(assignment)}\n`),
    exited,
    rssKb: () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return undefined;
      try {
        return Number(execFileSync('ps', ['-o', 'rss=', '-p', String(proc.pid)]).toString().trim()) || undefined;
      } catch {
        return undefined;
      }
    },
    kill: async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/** The environment an agent runtime gets: no secret, nothing but what node needs. */
export function minimalEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', NODE_OPTIONS: '' };
}

export interface WorkspaceSpec {
  prompt: string;
  input?: unknown;
  skills?: Record<string, string>;
}

/** A temp run workspace; returns its folder and a remover. */
export async function aWorkspace(spec: WorkspaceSpec): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'run-ws-'));
  await writeFile(join(dir, 'prompt.md'), spec.prompt);
  if (spec.input !== undefined) await writeFile(join(dir, 'input.json'), JSON.stringify(spec.input));
  for (const [id, text] of Object.entries(spec.skills ?? {})) {
    await mkdir(join(dir, 'skills', id), { recursive: true });
    await writeFile(join(dir, 'skills', id, 'SKILL.md'), text);
  }
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export interface SidecarAssignmentSpec {
  runId?: string;
  eventsUrl: string;
  eventSecret: string;
  token?: string;
  /** the model assignment; further fields (defaults, accepts, offers, embeddingModels) pass as given */
  model: ({ baseUrl: string; apiKey: string; model: string } & Record<string, unknown>) | null;
  outputSchema?: Record<string, unknown> | null;
  runtimeTools?: string[];
  heartbeatSeconds?: number;
  historyUrl?: string;
  memoryUrl?: string;
  filesDir?: string;
  egressAllowInternalHosts?: string[];
  egressPlatformEndpoints?: Array<{ host: string; port: number }>;
}

/** A run's sidecar token, as the sandbox makes one. */
export function aSidecarToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The header an agent presents to its sidecar. */
export function bearer(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}

export function aSidecarAssignment(spec: SidecarAssignmentSpec) {
  return {
    runId: 'run_test',
    outputSchema: null,
    runtimeTools: ['output', 'log'],
    heartbeatSeconds: 60,
    token: aSidecarToken(),
    // the scripted model listens on loopback, which the egress guard allows only when its host:port is named
    egressAllowInternalHosts: spec.model ? [new URL(spec.model.baseUrl).host] : [],
    ...spec,
  };
}

export function sidecarUrlOf(sidecar: WarmProcess): string {
  return `http://127.0.0.1:${sidecar.ready.port}`;
}

/** Polls a process's peak resident set (VmHWM, KiB) while it lives; keeps the last reading. */
export function trackPeakRss(p: WarmProcess, everyMs = 50): { peakKb(): number; stop(): void } {
  let peak = 0;
  const timer = setInterval(() => {
    try {
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.proc.pid}/status`, 'utf8'));
      if (hwm) peak = Math.max(peak, Number(hwm[1]));
    } catch {
      // the process has exited
    }
  }, everyMs);
  return { peakKb: () => peak, stop: () => clearInterval(timer) };
}

export const REAL_MODEL_KEY = 'sk-test-real-provider-key-0123456789';

export interface StartedRun {
  secret: string;
  receiver: EventReceiver;
  sidecar: WarmProcess;
  agent: WarmProcess;
  /** the agent runtime's environment as the kernel holds it (read before assignment) */
  agentEnviron: Record<string, string>;
  agentPeakRss: { peakKb(): number; stop(): void };
  /** performance.now() when both processes had been assigned */
  assignedAtMs: number;
  workspaceDir: string;
  /** the run's sidecar token */
  token: string;
  stop(): Promise<void>;
}

/** A whole run: receiver, sidecar and agent runtime as real processes, both assigned. */
export async function startRun(opts: {
  modelBaseUrl: string;
  model: string;
  workspace: WorkspaceSpec;
  outputSchema?: Record<string, unknown> | null;
  runtimeTools?: string[];
  heartbeatSeconds?: number;
  maxSteps?: number;
}): Promise<StartedRun> {
  const secret = newRunEventSecret();
  const receiver = await startEventReceiver(secret);
  const ws = await aWorkspace(opts.workspace);
  const [sidecar, agent] = await Promise.all([spawnWarm('sidecar/main.ts'), spawnWarm('agent-runtime/main.ts', minimalEnv())]);
  const agentEnviron = Object.fromEntries(
    readFileSync(`/proc/${agent.proc.pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const token = aSidecarToken();
  sidecar.assign(
    aSidecarAssignment({
      token,
      eventsUrl: `${receiver.url}/internal/runs/run_test/events`,
      eventSecret: secret,
      model: { baseUrl: opts.modelBaseUrl, apiKey: REAL_MODEL_KEY, model: opts.model },
      outputSchema: opts.outputSchema ?? null,
      runtimeTools: opts.runtimeTools ?? ['output', 'log'],
      heartbeatSeconds: opts.heartbeatSeconds ?? 60,
    }),
  );
  const agentPeakRss = trackPeakRss(agent);
  agent.assign({ workspace: ws.dir, sidecarUrl: sidecarUrlOf(sidecar), sidecarToken: token, maxSteps: opts.maxSteps });
  const assignedAtMs = performance.now();
  return {
    secret,
    receiver,
    sidecar,
    agent,
    agentEnviron,
    agentPeakRss,
    assignedAtMs,
    workspaceDir: ws.dir,
    token,
    stop: async () => {
      agentPeakRss.stop();
      await Promise.all([agent.kill(), sidecar.kill()]);
      await receiver.close();
      await ws.remove();
    },
  };
}

/** The event types in sequence order, after checking the sequence numbers run 1, 2, 3 ... */
export function typesInOrder(events: RunEvent[]): string[] {
  events.forEach((e, i) => {
    if (e.sequence !== i + 1) throw new Error(`event ${i} has sequence ${e.sequence}: ${JSON.stringify(events.map((x) => x.sequence))}`);
  });
  return events.map((e) => e.type);
}
