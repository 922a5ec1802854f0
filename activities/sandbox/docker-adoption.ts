// What the docker backend knows of a sandbox, decided from durable facts only: the Engine API's
// state of each container (running, exit, protocol label) and the sidecar's held end, a file it
// writes in its state folder before it answers the agent's last event. Nothing here reads an attach
// stream or a log, so a worker that adopts a pair after a restart judges it as its starter would.
import { access, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type Docker from 'dockerode';
import type { Logger } from '../../lib/log.ts';
import { PROTOCOL_LABEL, SANDBOX_PROTOCOL_VERSION } from '../../lib/sandbox-protocol.ts';
import { END_HELD_FILE } from '../../lib/warm-start.ts';
import type { SandboxState } from './adapter.ts';
import type { LoopbackRelays } from './docker-network.ts';
import { isStatus, LABEL_POOLED, LABEL_RELAYS, LABEL_RUN, LABEL_SANDBOX, type SandboxNames } from './docker-specs.ts';

const RELAY_REOPEN_ATTEMPTS = 50;
const RELAY_REOPEN_PAUSE_MS = 100;

interface ContainerFacts {
  running: boolean;
  protocol: string | undefined;
}

async function containerFacts(docker: Docker, name: string): Promise<ContainerFacts | null> {
  try {
    const info = await docker.getContainer(name).inspect();
    return { running: info.State.Running, protocol: info.Config.Labels?.[PROTOCOL_LABEL] };
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * running: both programs run. ending: the sidecar runs and holds the run's end (the agent may have
 * exited). gone: the sidecar exited (it gives up an end it cannot deliver by exiting), or the agent
 * exited without handing its end over, or the pair speaks another protocol than this worker.
 */
export async function pairState(docker: Docker, n: SandboxNames, stateDir: string): Promise<SandboxState> {
  const [sidecar, agent] = await Promise.all([containerFacts(docker, n.sidecar), containerFacts(docker, n.agent)]);
  if (!sidecar?.running || sidecar.protocol !== SANDBOX_PROTOCOL_VERSION) return 'gone';
  // Read after the agent's state: the file is written before the agent's last event is answered,
  // so an agent seen exited with no file there never handed its end over.
  if (await exists(path.join(stateDir, END_HELD_FILE))) return 'ending';
  return agent?.running ? 'running' : 'gone';
}

/**
 * Whether a sandbox is this worker's: it has its folder in the worker's work folder (made before
 * any of its parts, removed after them). The engine may be shared with other deployments and test
 * runs, whose pairs are neither adopted nor reaped here; nor could they be judged, their state
 * folders being elsewhere.
 */
export function ownedBy(workDir: string): (sandboxId: string) => Promise<boolean> {
  return (sandboxId) => exists(path.join(workDir, path.basename(sandboxId)));
}

/**
 * A warm pool's pair is labelled before its run is known: the claim writes the run, and the relays
 * its assignment goes through, in the sandbox's folder (not bound into any container, so neither
 * program can rewrite it). A pooled pair without this file was never handed to a run.
 */
export const CLAIM_FILE = 'claim.json';

export interface Claim {
  runId: string;
  relays: Array<{ target: string; port: number }>;
}

export async function writeClaim(sandboxDir: string, claim: Claim): Promise<void> {
  const file = path.join(sandboxDir, CLAIM_FILE);
  await writeFile(`${file}.tmp`, JSON.stringify(claim), { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

export async function readClaim(sandboxDir: string): Promise<Claim | null> {
  try {
    return JSON.parse(await readFile(path.join(sandboxDir, CLAIM_FILE), 'utf8')) as Claim;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * The run a sandbox serves, from a container's labels or, for a pooled pair, its claim; null for a
 * pooled pair that no run claimed.
 */
export async function sandboxRun(sandboxDir: string, containerLabels: Record<string, string>): Promise<string | null> {
  if (containerLabels[LABEL_POOLED] === 'true') return (await readClaim(sandboxDir))?.runId ?? null;
  return containerLabels[LABEL_RUN] ?? '';
}

/**
 * The pairs a previous worker on the same work folder left on this engine, with their runs, and the
 * pooled pairs it left unclaimed (never a run's: the caller removes them). Each adopted sidecar's
 * relays (its label's, or its claim's for a pooled pair) are re-opened on the ports its URLs name
 * before this answers, so the pair reaches the platform again before any workflow re-attaches to it.
 */
export async function adoptSandboxes(
  docker: Docker, relays: LoopbackRelays, workDir: string, log?: Logger,
): Promise<{ adopted: Map<string, string>; unclaimed: Set<string> }> {
  const owned = ownedBy(workDir);
  const adopted = new Map<string, string>();
  const unclaimed = new Set<string>();
  const found = await docker.listContainers({ all: true, filters: { label: [LABEL_SANDBOX] } });
  for (const c of found) {
    const sandboxId = c.Labels[LABEL_SANDBOX];
    const dir = path.join(workDir, path.basename(sandboxId));
    let reopen: Claim['relays'] = [];
    if (!adopted.has(sandboxId)) {
      if (unclaimed.has(sandboxId) || !(await owned(sandboxId))) continue;
      const runId = await sandboxRun(dir, c.Labels);
      if (runId === null) {
        unclaimed.add(sandboxId);
        continue;
      }
      adopted.set(sandboxId, runId);
      if (c.Labels[LABEL_POOLED] === 'true') reopen = (await readClaim(dir))?.relays ?? [];
    }
    // a pooled sidecar's label names the relays open when it was made, not those of its run
    if (c.Labels[LABEL_RELAYS] && c.Labels[LABEL_POOLED] !== 'true') reopen = JSON.parse(c.Labels[LABEL_RELAYS]) as Claim['relays'];
    for (const r of reopen) {
      await reopenRelay(relays, r.target, r.port).catch((err: Error) =>
        log?.error('a sandbox relay could not re-open on its port: its sidecar cannot reach the platform', { sandboxId, target: r.target, port: r.port, error: err.message }),
      );
    }
  }
  if (adopted.size) log?.info('docker sandboxes adopted', { sandboxes: [...adopted.keys()] });
  return { adopted, unclaimed };
}

/** A port its killed owner held a moment ago may still be closing: tried again for a few seconds. */
async function reopenRelay(relays: LoopbackRelays, target: string, port: number): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      const opened = await relays.portFor(target, port);
      if (opened !== port) throw new Error(`${target} is relayed on port ${opened} already`);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= RELAY_REOPEN_ATTEMPTS) throw err;
      await new Promise((r) => setTimeout(r, RELAY_REOPEN_PAUSE_MS));
    }
  }
}
