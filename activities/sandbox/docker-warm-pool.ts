// The docker backend's warm pool (SANDBOX_WARM_POOL): pairs made up to their assignment, as a cold
// start makes them (docker-pair.ts), waiting in a WarmPool (warm-pool.ts). A pooled pair is
// labelled pooled, not with a run; a claim writes the run (and the relays its assignment goes
// through) into the sandbox's folder, where a restarted worker reads it (docker-adoption.ts). A
// pooled pair without a claim is never a run's: close() and the next adapter remove it.
import { access, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type Docker from 'dockerode';
import { randomBase62 } from '../../lib/ids.ts';
import type { SandboxSpec, SidecarAssignment } from './adapter.ts';
import { readClaim, writeClaim } from './docker-adoption.ts';
import type { LoopbackRelays } from './docker-network.ts';
import { handOver, launchPair, relayedAssignment, type LaunchedPair, type PairParts } from './docker-pair.ts';
import type { WaitingPair } from './warm-pool.ts';
import { writeWorkspace } from './workspace-writer.ts';

/** in a pooled pair's folder from its first moment: a folder holding it and no claim is never a run's */
export const POOLED_MARKER = 'pooled';

export class PooledDockerPair implements WaitingPair {
  readonly ended: Promise<void>;

  constructor(
    readonly id: string,
    readonly dir: string,
    readonly heapMb: number,
    readonly limits: { memoryMb: number; cpus: number },
    readonly launched: LaunchedPair,
    private readonly remove: (sandboxId: string) => Promise<void>,
  ) {
    this.ended = Promise.race([launched.programs.sidecar.exited, launched.programs.agent.exited]);
  }

  alive(): boolean {
    return !this.launched.programs.sidecar.hasExited && !this.launched.programs.agent.hasExited;
  }

  /**
   * Fit for a run: both containers running as the engine sees it (an exit the attach stream has not
   * told yet is caught here), and its workspace still empty, so the run's files are written as into a
   * fresh folder, with nothing there to write through.
   */
  async fresh(): Promise<boolean> {
    if (!this.alive()) return false;
    const states = await Promise.all([this.launched.sidecar, this.launched.agent].map((c) => c.inspect().then((i) => i.State.Running, () => false)));
    const empty = await readdir(path.join(this.dir, 'workspace')).then((entries) => entries.length === 0, () => false);
    return empty && states.every(Boolean);
  }

  stderrTail(): string {
    return this.launched.programs.sidecar.stderrTail() + this.launched.programs.agent.stderrTail();
  }

  stop(): Promise<void> {
    this.launched.programs.sidecar.detach();
    this.launched.programs.agent.detach();
    return this.remove(this.id);
  }
}

export interface PoolSettings {
  workDir: string;
  images: PairParts['images'];
  relays: LoopbackRelays;
  limits: { memoryMb: number; cpus: number };
  heapMb: number;
  /** removes a sandbox's parts (the adapter's stop) */
  remove: (sandboxId: string) => Promise<void>;
}

/** A pair made up to its assignment: its folder (empty workspace), network, firewall rules, both containers started and ready. */
export async function makePooledPair(docker: Docker, s: PoolSettings): Promise<PooledDockerPair> {
  const sandboxId = `sbx_${randomBase62(20)}`;
  const dir = path.join(s.workDir, sandboxId);
  let programs: LaunchedPair['programs'] | undefined;
  try {
    await mkdir(dir);
    await writeFile(path.join(dir, POOLED_MARKER), '');
    await Promise.all(['workspace', 'files', 'state'].map((d) => mkdir(path.join(dir, d))));
    await handOver(dir);
    const launched = await launchPair(docker, {
      sandboxId, runId: null, dir, images: s.images, relays: s.relays, limits: s.limits, heapMb: s.heapMb, servers: [],
    }, (p) => (programs = p));
    return new PooledDockerPair(sandboxId, dir, s.heapMb, s.limits, launched, s.remove);
  } catch (err) {
    programs?.sidecar.detach();
    programs?.agent.detach();
    await s.remove(sandboxId).catch(() => undefined);
    throw err;
  }
}

/**
 * Makes a waiting pair (fresh()) the run's, up to (not including) its assignments: the workspace
 * written into the folder the agent already has, the agent's CPU ceiling set when the run's
 * differs, the assignment's URLs relayed, and the claim written (the run and those relays) so a
 * restarted worker knows whose pair it is. Only a run of the pool's memory ceiling claims one (the
 * agent's heap is fixed when it starts).
 */
export async function claimPooledPair(pair: PooledDockerPair, spec: SandboxSpec, relays: LoopbackRelays): Promise<SidecarAssignment> {
  const workspace = path.join(pair.dir, 'workspace');
  await writeWorkspace(workspace, spec.workspace);
  await handOver(workspace);
  if (spec.limits.cpus !== pair.limits.cpus) await pair.launched.agent.update({ NanoCpus: Math.round(spec.limits.cpus * 1e9) });
  const assignment = await relayedAssignment(spec.sidecar, relays);
  await writeClaim(pair.dir, { runId: spec.runId, relays: relays.entries() });
  return assignment;
}

/** Whether a folder of the work folder is a pooled pair's that no run claimed. */
export async function unclaimedPooledFolder(dir: string): Promise<boolean> {
  try {
    await access(path.join(dir, POOLED_MARKER));
  } catch {
    return false;
  }
  return (await readClaim(dir)) === null;
}
