// One docker sandbox's parts, made the same way for a run (the cold path) and for the warm pool:
// the run network and its host firewall rules, the sidecar and agent containers created, attached
// and started, their ready lines read (launchPair); then the assignments (assignPair). Everything
// the containers are made with comes from docker-specs.ts, so a pooled pair is confined exactly as
// a cold one.
import { randomBytes } from 'node:crypto';
import { chown, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { Logger } from '../../lib/log.ts';
import type { LocalIntegrationAssignment, LocalServerSpec, SidecarAssignment } from './adapter.ts';
import { AttachedProgram } from './docker-attached-program.ts';
import { processLiveness, readyLine, type Liveness } from './readiness.ts';
import { createMcpNetwork, startLocalServers } from './docker-local-servers.ts';
import { closeHostPorts, needsRelay, removeHostRules, type LoopbackRelays } from './docker-network.ts';
import {
  agentContainerSpec, EGRESS_NETWORK, ignoreMissing, isStatus, LABEL_SANDBOX, names, runNetworkSpec, SANDBOX_UID, sidecarContainerSpec, SIDECAR_MCP_ALIAS,
} from './docker-specs.ts';

const READY_TIMEOUT_MS = 30_000;
const ASSIGN_TIMEOUT_MS = 10_000;

/**
 * A container's liveness when its ready timeout has passed: dead once it no longer runs, held
 * (progressing) while paused, else its main process's from the host's /proc (the daemon on this
 * host); stalled when that cannot be read (a remote daemon), which fails the wait as before.
 */
function containerLiveness(container: Docker.Container): () => Promise<Liveness> {
  let ofProcess: (() => Promise<Liveness>) | undefined;
  return async () => {
    const state = (await container.inspect().catch(() => null))?.State;
    if (!state?.Running) return 'dead';
    if (state.Paused) return 'progressing';
    ofProcess ??= processLiveness(state.Pid);
    const seen = await ofProcess();
    return seen === 'dead' ? 'stalled' : seen;
  };
}

export interface PairParts {
  sandboxId: string;
  /** null: a warm pool's pair (labelled pooled, its run written at claim) */
  runId: string | null;
  dir: string;
  images: { sidecar: string; agent: string; localAllowed: string[] };
  relays: LoopbackRelays;
  limits: { memoryMb: number; cpus: number };
  heapMb: number;
  servers: LocalServerSpec[];
}

/** A pair whose programs have said they are ready and wait for their assignments. */
export interface LaunchedPair {
  sidecar: Docker.Container;
  agent: Docker.Container;
  programs: { sidecar: AttachedProgram; agent: AttachedProgram };
  sidecarPort: number;
  /** the sidecar's addresses: on the run network (the agent's way to it) and on the egress network */
  sidecarIp: string;
  egressIp: string | undefined;
  local: { ready: Promise<LocalIntegrationAssignment[]> } | null;
}

/**
 * Network, containers, attach, start, ready lines. The caller has made and handed over the
 * sandbox's folder; on failure the caller removes the parts (removeSandboxParts).
 * `onAttached` gets the programs as soon as they exist, so the caller can let go of them.
 */
export async function launchPair(
  docker: Docker, p: PairParts, onAttached: (programs: LaunchedPair['programs']) => void, phase: (name: string) => void = () => undefined,
): Promise<LaunchedPair> {
  const n = names(p.sandboxId);
  await docker.createNetwork(runNetworkSpec(p.sandboxId, p.runId));
  await closeHostPorts(n.bridge);
  phase('network_ms');
  const sidecar = await docker.createContainer(sidecarContainerSpec({
    sandboxId: p.sandboxId, runId: p.runId, image: p.images.sidecar, filesDir: path.join(p.dir, 'files'), stateDir: path.join(p.dir, 'state'),
    relays: p.relays.entries(),
  }));
  await docker.getNetwork(n.network).connect({ Container: sidecar.id, EndpointConfig: { Aliases: ['sidecar'] } });
  let local: LaunchedPair['local'] = null;
  if (p.servers.length) {
    // only a run's pair has local servers: the pool never makes them
    const runId = p.runId ?? '';
    await createMcpNetwork(docker, p.sandboxId, runId);
    // the servers name the sidecar's egress proxy by this alias (its address is given at start)
    await docker.getNetwork(n.mcpNetwork).connect({ Container: sidecar.id, EndpointConfig: { Aliases: [SIDECAR_MCP_ALIAS] } });
    local = await startLocalServers(docker, {
      sandboxId: p.sandboxId, runId, sandboxDir: p.dir, servers: p.servers, agentImage: p.images.agent, allowedImages: p.images.localAllowed, limits: p.limits,
    });
  }
  const agent = await docker.createContainer(agentContainerSpec({
    sandboxId: p.sandboxId, runId: p.runId, image: p.images.agent, workspaceDir: path.join(p.dir, 'workspace'), heapMb: p.heapMb, limits: p.limits,
  }));

  const attach = async (container: Docker.Container, label: string) =>
    new AttachedProgram(label, (await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as Duplex, docker);
  const programs = { sidecar: await attach(sidecar, 'sidecar'), agent: await attach(agent, 'agent-runtime') };
  onAttached(programs);
  phase('create_ms');
  await Promise.all([sidecar.start(), agent.start()]);
  phase('start_ms');

  // slow is not dead: a start under load that outlasts its timeout is waited for while its container lives and progresses
  const [sidecarReady, agentReady] = await Promise.all([
    readyLine(programs.sidecar, { timeoutMs: READY_TIMEOUT_MS, liveness: containerLiveness(sidecar) }),
    readyLine(programs.agent, { timeoutMs: READY_TIMEOUT_MS, liveness: containerLiveness(agent) }),
  ]);
  const port = sidecarReady.port;
  if (sidecarReady.ready !== true || typeof port !== 'number' || agentReady.ready !== true) throw new Error('sandbox programs did not start: unexpected ready line');
  const sidecarNets = (await sidecar.inspect()).NetworkSettings.Networks as Record<string, { IPAddress?: string }>;
  const sidecarIp = sidecarNets[n.network]?.IPAddress;
  if (!sidecarIp) throw new Error('the sidecar has no address on its run network');
  phase('programs_ready_ms');
  return { sidecar, agent, programs, sidecarPort: port, sidecarIp, egressIp: sidecarNets[EGRESS_NETWORK]?.IPAddress, local };
}

/** Sends both assignments (the sidecar's first, with the run's fresh token); answers once the sidecar took its own. */
export async function assignPair(pair: LaunchedPair, assignment: SidecarAssignment, memoryMb: number, log?: Logger): Promise<void> {
  const localIntegrations = pair.local ? await pair.local.ready : [];
  const token = randomBytes(32).toString('base64url');
  pair.programs.sidecar.send({ ...assignment, token, filesDir: '/files', localIntegrations });
  const ack = await pair.programs.sidecar.nextLine(ASSIGN_TIMEOUT_MS);
  if (ack.assigned !== true) throw new Error('the sidecar did not take its assignment');
  // confined: the agent's only way out is its sidecar; no shell (the image has none)
  pair.programs.agent.send({ workspace: '/workspace', sidecarUrl: `http://${pair.sidecarIp}:${pair.sidecarPort}`, sidecarToken: token, confined: true, shell: null });
  if (pair.egressIp) void reportMemoryOverrun(pair.agent, pair.programs.agent, `http://${pair.egressIp}:${pair.sidecarPort}`, token, memoryMb, log);
}

/**
 * The sidecar's assignment with every URL it cannot reach itself (loopback or an internal address:
 * the platform, a local model server) rewritten to a relay on the egress gateway; the allowlist
 * and the platform's endpoints follow the rewrite.
 */
export async function relayedAssignment(assignment: SidecarAssignment, relays: LoopbackRelays): Promise<SidecarAssignment> {
  const viaRelay = async (raw: string | undefined): Promise<string | undefined> => {
    if (!raw) return raw;
    const url = new URL(raw);
    if (!needsRelay(url.hostname)) return raw;
    const port = url.port || (url.protocol === 'https:' ? '443' : '80');
    url.host = `${relays.listenHost}:${await relays.portFor(`${url.hostname}:${port}`)}`;
    return url.toString().replace(/\/$/, raw.endsWith('/') ? '/' : '');
  };
  const relayedHost = (entry: { host: string; port: number }) => {
    const target = `${entry.host.includes(':') ? `[${entry.host}]` : entry.host}:${entry.port}`;
    const hit = relays.entries().find((r) => r.target === target);
    return hit ? { host: relays.listenHost, port: hit.port } : null;
  };
  const out: SidecarAssignment = {
    ...assignment,
    eventsUrl: (await viaRelay(assignment.eventsUrl))!,
    historyUrl: await viaRelay(assignment.historyUrl),
    memoryUrl: await viaRelay(assignment.memoryUrl),
    publishUrl: await viaRelay(assignment.publishUrl),
    checkpointUrl: await viaRelay(assignment.checkpointUrl),
    connectionsUrl: await viaRelay(assignment.connectionsUrl),
    approvalsUrl: await viaRelay(assignment.approvalsUrl),
    model: assignment.model && { ...assignment.model, baseUrl: (await viaRelay(assignment.model.baseUrl))! },
  };
  const allow = [...(assignment.egressAllowInternalHosts ?? [])];
  for (const entry of assignment.egressAllowInternalHosts ?? []) {
    const colon = entry.lastIndexOf(':');
    const host = entry.slice(0, colon).replace(/^\[|\]$/g, '');
    const relayed = relayedHost({ host, port: Number(entry.slice(colon + 1)) });
    if (relayed) allow.push(`${relayed.host}:${relayed.port}`);
  }
  out.egressAllowInternalHosts = allow;
  const endpoints = [...(assignment.egressPlatformEndpoints ?? [])];
  for (const e of assignment.egressPlatformEndpoints ?? []) {
    const relayed = relayedHost(e);
    if (relayed) endpoints.push(relayed);
  }
  // the platform's own address as the sidecar sees it is never a model provider either
  const events = new URL(out.eventsUrl);
  endpoints.push({ host: events.hostname, port: Number(events.port || 80) });
  out.egressPlatformEndpoints = endpoints;
  return out;
}

/**
 * A sandbox's containers (the pair and its local integrations' servers: every one labelled with
 * the sandbox), its two networks, their firewall rules and its folder, whichever of them exist.
 */
export async function removeSandboxParts(docker: Docker, workDir: string, sandboxId: string): Promise<void> {
  const n = names(sandboxId);
  const labelled = await docker.listContainers({ all: true, filters: { label: [`${LABEL_SANDBOX}=${sandboxId}`] } });
  const containers = new Set([n.agent, n.sidecar, ...labelled.map((c) => c.Id)]);
  await Promise.all([...containers].map((name) => ignoreMissing(docker.getContainer(name).remove({ force: true, v: true }))));
  await ignoreMissing(docker.getNetwork(n.network).remove());
  await ignoreMissing(docker.getNetwork(n.mcpNetwork).remove());
  await removeHostRules(n.bridge);
  await removeHostRules(n.mcpBridge);
  // last: the folder is what makes the sandbox this work folder's (ownedBy)
  await rm(path.join(workDir, sandboxId), { recursive: true, force: true });
}

/** what a run whose agent went over its memory ceiling ends with */
export const MEMORY_EXCEEDED_CODE = 'agent_memory_exceeded';

/**
 * When the agent ends over its memory ceiling (killed by the kernel, or its V8 heap exhausted),
 * its sidecar is told so on the agent's own channel, and the run fails with that reason instead
 * of a sandbox that merely vanished.
 */
async function reportMemoryOverrun(agent: Docker.Container, program: AttachedProgram, sidecarUrl: string, token: string, memoryMb: number, log?: Logger): Promise<void> {
  try {
    await agent.wait();
    const info = await agent.inspect();
    if (!info.State.OOMKilled && !program.heapExhausted) return;
    const message = `The agent went over its memory ceiling of ${memoryMb} MiB (agent_memory_ceiling_mb) and was stopped.`;
    const { request } = await import('node:http');
    await new Promise<void>((resolve, reject) => {
      const body = JSON.stringify({ type: 'failed', code: MEMORY_EXCEEDED_CODE, message });
      const req = request(`${sidecarUrl}/runtime/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: 10_000,
      }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject).on('timeout', () => req.destroy(new Error('the sidecar did not answer')));
      req.end(body);
    });
  } catch (err) {
    // the sandbox was removed meanwhile (404), or the sidecar is gone: the run ends as lost
    if (!isStatus(err, 404)) log?.debug('memory overrun not reported', { error: (err as Error).message });
  }
}

/** Gives a folder of the sandbox to the images' user (when this host can chown), so the agent may write its workspace. */
export async function handOver(dir: string): Promise<void> {
  const walk = async (p: string): Promise<void> => {
    await chown(p, SANDBOX_UID, SANDBOX_UID);
    for (const e of await readdir(p, { withFileTypes: true })) {
      if (e.isDirectory()) await walk(path.join(p, e.name));
      else await chown(path.join(p, e.name), SANDBOX_UID, SANDBOX_UID);
    }
  };
  try {
    await walk(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
    throw new Error('the docker backend needs to run as root to hand the workspace to the sandbox user');
  }
}
