// RUN_ADAPTER=docker: each run gets two containers, its agent runtime and its sidecar, started
// from the sandbox images (docker/build-images.sh), over the Engine API (dockerode).
// - The agent sits on a per-run --internal network whose only other member is its sidecar: no
//   route out, and the host's own ports are closed to that bridge (docker-network.ts).
// - The sidecar is also on the shared egress network (inter-container traffic off), where it
//   reaches model providers and, through relays on the gateway address, the platform and anything
//   else at a loopback or internal address.
// - Both: non-root, read-only root, every capability dropped, no-new-privileges, pids, memory and
//   CPU ceilings (docker-specs.ts); the agent writes only its workspace, the sidecar its files and
//   its state folder.
// - Local integrations' MCP servers each get a container, confined the same way, on a second
//   --internal network shared with the sidecar only (docker-local-servers.ts).
// - The programs take their assignment on stdin (the same handshake as the process backend). The
//   pair outlives a worker restart: a new adapter on the same work folder adopts the labelled
//   containers of its sandboxes (the engine may serve other deployments too) and re-opens their
//   relays before it answers (docker-adoption.ts), and the run's workflow, which
//   knows its sandbox by id, finds it running again. A sandbox's state is read from the Engine API
//   and the sidecar's state folder, never from a stream only the starting worker saw.
import { randomBytes } from 'node:crypto';
import { chown, mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import Docker from 'dockerode';
import { randomBase62 } from '../../lib/ids.ts';
import type { Logger } from '../../lib/log.ts';
import type { SandboxAdapter, SandboxSpec, SidecarAssignment } from './adapter.ts';
import { adoptSandboxes, ownedBy, pairState } from './docker-adoption.ts';
import { AttachedProgram } from './docker-attached-program.ts';
import { createMcpNetwork, serverImage, startLocalServers, writeServerFiles } from './docker-local-servers.ts';
import { closeHostPorts, LoopbackRelays, needsRelay, removeHostRules } from './docker-network.ts';
import {
  agentContainerSpec, EGRESS_BRIDGE, EGRESS_NETWORK, ensureEgressNetwork, ignoreMissing, isStatus, LABEL_RUN, LABEL_SANDBOX, names,
  runNetworkSpec, SANDBOX_UID, sidecarContainerSpec,
} from './docker-specs.ts';
import { agentHeapMb } from './sandbox-pair.ts';
import { checkWorkspacePaths, writeWorkspace } from './workspace-writer.ts';

export { EGRESS_NETWORK, LABEL_ROLE, LABEL_RUN, LABEL_SANDBOX } from './docker-specs.ts';

const READY_TIMEOUT_MS = 30_000;
const ASSIGN_TIMEOUT_MS = 10_000;

/** the docker backend's work folder in the worker's data directory */
export const DOCKER_WORK_FOLDER = 'docker-sandboxes';

export interface DockerAdapterOptions {
  /** folders bound into the containers go under it: <workDir>/<sandboxId>/{workspace,files,state} */
  workDir: string;
  sidecarImage: string;
  agentImage: string;
  /** images a local integration may name besides the agent image (LOCAL_INTEGRATION_IMAGES) */
  localIntegrationImages?: string[];
  /** the Engine API socket; /var/run/docker.sock when absent */
  socketPath?: string;
  log?: Logger;
}

export interface DockerSandboxAdapter extends SandboxAdapter {
  readonly kind: 'docker';
  /** names of a running sandbox's containers and run network, for diagnostics and tests */
  containers(sandboxId: string): { sidecar: string; agent: string; network: string; mcpNetwork: string };
  /** the Engine API client the adapter uses */
  readonly docker: Docker;
  /** the egress network's gateway address (where the relays listen) */
  readonly gateway: string;
}

interface Known {
  runId: string;
  programs?: { sidecar: AttachedProgram; agent: AttachedProgram };
}

/**
 * The sidecar's assignment with every URL it cannot reach itself (loopback or an internal address:
 * the platform, a local model server) rewritten to a relay on the egress gateway; the allowlist
 * and the platform's endpoints follow the rewrite.
 */
async function relayedAssignment(assignment: SidecarAssignment, relays: LoopbackRelays): Promise<SidecarAssignment> {
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
    connectionsUrl: await viaRelay(assignment.connectionsUrl),
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

export async function createDockerAdapter(opts: DockerAdapterOptions): Promise<DockerSandboxAdapter> {
  const docker = new Docker({ socketPath: opts.socketPath ?? '/var/run/docker.sock' });
  const workDir = path.resolve(opts.workDir);
  await mkdir(workDir, { recursive: true });
  const gateway = await ensureEgressNetwork(docker);
  const relays = new LoopbackRelays(gateway, EGRESS_BRIDGE, opts.log);
  /** the sandboxes this adapter answers for, with their run, and the attach streams of those it started */
  const known = new Map<string, Known>();
  const stopping = new Map<string, Promise<void>>();
  let closed = false;
  const stateDirOf = (sandboxId: string) => path.join(workDir, sandboxId, 'state');

  const removeSandbox = async (sandboxId: string): Promise<void> => {
    const entry = known.get(sandboxId);
    entry?.programs?.sidecar.detach();
    entry?.programs?.agent.detach();
    await removeSandboxParts(docker, workDir, sandboxId);
    known.delete(sandboxId);
  };

  const stop = (sandboxId: string): Promise<void> => {
    let pending = stopping.get(sandboxId);
    if (!pending) {
      pending = removeSandbox(sandboxId).finally(() => stopping.delete(sandboxId));
      stopping.set(sandboxId, pending);
    }
    return pending;
  };

  // The pairs a previous worker on this work folder left running are this adapter's now (their
  // runs' workflows re-attach by sandbox id; the reaper stops those whose run has ended).
  const owned = ownedBy(workDir);
  for (const [sandboxId, runId] of await adoptSandboxes(docker, relays, owned, opts.log)) known.set(sandboxId, { runId });
  // its run networks whose containers are gone (a crash between the two): nothing to adopt
  for (const net of await docker.listNetworks({ filters: { label: [LABEL_SANDBOX] } })) {
    const sandboxId = net.Labels?.[LABEL_SANDBOX];
    if (sandboxId && !known.has(sandboxId) && (await owned(sandboxId))) await stop(sandboxId);
  }

  const start = async (spec: SandboxSpec): Promise<{ sandboxId: string }> => {
    if (closed) throw new Error('the docker sandbox adapter is closed');
    checkWorkspacePaths(spec.workspace);
    // a local server's image is the tenant's choice: one the operator does not allow is refused before anything exists
    for (const server of spec.localServers ?? []) serverImage(server, opts.agentImage, opts.localIntegrationImages ?? []);
    const sandboxId = `sbx_${randomBase62(20)}`;
    const n = names(sandboxId);
    const dir = path.join(workDir, sandboxId);
    const entry: Known = { runId: spec.runId };
    known.set(sandboxId, entry);
    // where a start's time goes (logged at debug): what a warm pool could and could not take off
    const phases: Record<string, number> = {};
    let since = performance.now();
    const phase = (name: string) => {
      const now = performance.now();
      phases[name] = Math.round(now - since);
      since = now;
    };
    try {
      const workspace = path.join(dir, 'workspace');
      const files = path.join(dir, 'files');
      await Promise.all([workspace, files, stateDirOf(sandboxId)].map((d) => mkdir(d, { recursive: true })));
      await writeWorkspace(workspace, spec.workspace);
      const servers = spec.localServers ?? [];
      await writeServerFiles(dir, servers);
      await handOver(dir);
      const assignment = await relayedAssignment(spec.sidecar, relays);
      phase('folders_ms');

      await docker.createNetwork(runNetworkSpec(sandboxId, spec.runId));
      await closeHostPorts(n.bridge);
      phase('network_ms');
      const sidecar = await docker.createContainer(sidecarContainerSpec({
        sandboxId, runId: spec.runId, image: opts.sidecarImage, filesDir: files, stateDir: stateDirOf(sandboxId), relays: relays.entries(),
      }));
      await docker.getNetwork(n.network).connect({ Container: sidecar.id, EndpointConfig: { Aliases: ['sidecar'] } });
      if (servers.length) {
        await createMcpNetwork(docker, sandboxId, spec.runId);
        await docker.getNetwork(n.mcpNetwork).connect({ Container: sidecar.id });
      }
      const local = servers.length
        ? await startLocalServers(docker, {
          sandboxId, runId: spec.runId, sandboxDir: dir, servers, agentImage: opts.agentImage,
          allowedImages: opts.localIntegrationImages ?? [], limits: spec.limits,
        })
        : null;
      const agent = await docker.createContainer(agentContainerSpec({
        sandboxId, runId: spec.runId, image: opts.agentImage, workspaceDir: workspace, heapMb: agentHeapMb(spec.limits.memoryMb), limits: spec.limits,
      }));

      const attach = async (container: Docker.Container, label: string) =>
        new AttachedProgram(label, (await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as Duplex, docker);
      const programs = { sidecar: await attach(sidecar, 'sidecar'), agent: await attach(agent, 'agent-runtime') };
      entry.programs = programs;
      phase('create_ms');
      await Promise.all([sidecar.start(), agent.start()]);
      phase('start_ms');

      const [sidecarReady, agentReady] = await Promise.all([programs.sidecar.nextLine(READY_TIMEOUT_MS), programs.agent.nextLine(READY_TIMEOUT_MS)]);
      const port = sidecarReady.port;
      if (sidecarReady.ready !== true || typeof port !== 'number' || agentReady.ready !== true) throw new Error('sandbox programs did not start: unexpected ready line');
      const sidecarNets = (await sidecar.inspect()).NetworkSettings.Networks as Record<string, { IPAddress?: string }>;
      const sidecarIp = sidecarNets[n.network]?.IPAddress;
      if (!sidecarIp) throw new Error('the sidecar has no address on its run network');
      phase('programs_ready_ms');

      const localIntegrations = local ? await local.ready : [];
      const token = randomBytes(32).toString('base64url');
      programs.sidecar.send({ ...assignment, token, filesDir: '/files', localIntegrations });
      const ack = await programs.sidecar.nextLine(ASSIGN_TIMEOUT_MS);
      if (ack.assigned !== true) throw new Error('the sidecar did not take its assignment');
      // confined: the agent's only way out is its sidecar; no shell (the image has none)
      programs.agent.send({ workspace: '/workspace', sidecarUrl: `http://${sidecarIp}:${port}`, sidecarToken: token, confined: true, shell: null });
      const egressIp = sidecarNets[EGRESS_NETWORK]?.IPAddress;
      if (egressIp) void reportMemoryOverrun(agent, programs.agent, `http://${egressIp}:${port}`, token, spec.limits.memoryMb, opts.log);
      phase('assigned_ms');
      opts.log?.debug('docker sandbox started', { runId: spec.runId, sandboxId, ...phases });
      return { sandboxId };
    } catch (err) {
      await stop(sandboxId).catch(() => undefined);
      throw err;
    }
  };

  const state = async (sandboxId: string) => {
    if (stopping.has(sandboxId)) return 'gone' as const;
    const found = await pairState(docker, names(sandboxId), stateDirOf(sandboxId));
    // a pair found after this adapter started (another worker's, adopted late) is this adapter's from now on
    if (found !== 'gone' && !known.has(sandboxId)) {
      const info = await docker.getContainer(names(sandboxId).sidecar).inspect().catch(() => null);
      known.set(sandboxId, { runId: info?.Config.Labels[LABEL_RUN] ?? '' });
    }
    return found;
  };

  return {
    kind: 'docker',
    docker,
    gateway,
    start,
    state,
    async alive(sandboxId) {
      return (await state(sandboxId)) === 'running';
    },
    sandboxes() {
      return [...known].map(([sandboxId, k]) => ({ sandboxId, runId: k.runId }));
    },
    stop,
    async close() {
      closed = true;
      // the containers stay: a worker that restarts adopts them (the reaper removes those of ended runs)
      for (const k of known.values()) {
        k.programs?.sidecar.detach();
        k.programs?.agent.detach();
      }
      await Promise.all(stopping.values());
      await relays.close();
    },
    containers(sandboxId) {
      const n = names(sandboxId);
      return { sidecar: n.sidecar, agent: n.agent, network: n.network, mcpNetwork: n.mcpNetwork };
    },
  };
}

/**
 * A sandbox's containers (the pair and its local integrations' servers: every one labelled with
 * the sandbox), its two networks, their firewall rules and its folder, whichever of them exist.
 */
async function removeSandboxParts(docker: Docker, workDir: string, sandboxId: string): Promise<void> {
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

/**
 * Removes every sandbox of a work folder whose worker is gone for good (a deployment taken down
 * with its data): the runs they served are over. The shared egress network stays, other workers
 * may use it. Answers the sandboxes removed.
 */
export async function removeDockerSandboxes(opts: { workDir: string; socketPath?: string }): Promise<string[]> {
  const docker = new Docker({ socketPath: opts.socketPath ?? '/var/run/docker.sock' });
  const workDir = path.resolve(opts.workDir);
  const owned = ownedBy(workDir);
  const found = new Set<string>();
  for (const c of await docker.listContainers({ all: true, filters: { label: [LABEL_SANDBOX] } })) found.add(c.Labels[LABEL_SANDBOX]);
  for (const net of await docker.listNetworks({ filters: { label: [LABEL_SANDBOX] } })) if (net.Labels?.[LABEL_SANDBOX]) found.add(net.Labels[LABEL_SANDBOX]);
  // folders left without parts (a crash before the first was made)
  for (const e of await readdir(workDir, { withFileTypes: true }).catch(() => [])) if (e.isDirectory() && e.name.startsWith('sbx_')) found.add(e.name);
  const removed: string[] = [];
  for (const sandboxId of found) {
    if (!(await owned(sandboxId))) continue;
    await removeSandboxParts(docker, workDir, sandboxId);
    removed.push(sandboxId);
  }
  return removed;
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

/** Gives the sandbox folder to the images' user (when this host can chown), so the agent may write its workspace. */
async function handOver(dir: string): Promise<void> {
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
