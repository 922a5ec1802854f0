// RUN_ADAPTER=docker: each run gets two containers, its agent runtime and its sidecar, started
// from the sandbox images (docker/build-images.sh), over the Engine API (dockerode).
// - The agent sits on a per-run --internal network whose only other member is its sidecar: no
//   route out, and the host's own ports are closed to that bridge (docker-network.ts).
// - The sidecar is also on the shared egress network (inter-container traffic off), where it
//   reaches model providers and, through relays on the gateway address, the platform.
// - Both: non-root, read-only root, every capability dropped, no-new-privileges, pids, memory and
//   CPU ceilings; the agent writes only its workspace (a bind mount), the sidecar only its files.
// - The programs take their assignment on stdin (the same handshake as the process backend). A
//   container's stdin stays open when the worker that attached goes away, so the pair outlives a
//   worker restart: a new adapter adopts the labelled containers it finds, re-opens their relays,
//   and the run's workflow, which knows its sandbox by id, finds it running again.
import { randomBytes } from 'node:crypto';
import { chown, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, type Duplex } from 'node:stream';
import Docker from 'dockerode';
import { randomBase62 } from '../../lib/ids.ts';
import type { Logger } from '../../lib/log.ts';
import { PROTOCOL_LABEL, SANDBOX_PROTOCOL_VERSION } from '../../lib/sandbox-protocol.ts';
import { END_HELD } from '../../lib/warm-start.ts';
import type { SandboxAdapter, SandboxSpec, SandboxState, SidecarAssignment } from './adapter.ts';
import { closeHostPorts, isLoopbackHost, LoopbackRelays, relayHostRules, removeHostRules } from './docker-network.ts';
import { agentHeapMb, SIDECAR_HEAP_MB } from './sandbox-pair.ts';
import { checkWorkspacePaths, writeWorkspace } from './workspace-writer.ts';

export const LABEL_SANDBOX = 'org.agent-platform.sandbox';
export const LABEL_RUN = 'org.agent-platform.run';
export const LABEL_ROLE = 'org.agent-platform.role';
const LABEL_RELAYS = 'org.agent-platform.relays';
const LABEL_EGRESS = 'org.agent-platform.egress';
export const EGRESS_NETWORK = 'agent-platform-egress';
const EGRESS_BRIDGE = 'ap-egress0';
/** the image's non-root user; the workspace and files folders are handed to it */
const SANDBOX_UID = 10001;
const READY_TIMEOUT_MS = 30_000;
const ASSIGN_TIMEOUT_MS = 10_000;
const SIDECAR_MEMORY_MB = SIDECAR_HEAP_MB + 128;
const AGENT_PIDS = 128;
const SIDECAR_PIDS = 64;
const STDERR_TAIL_CHARS = 4000;
const HEAP_EXHAUSTED = /heap out of memory|Reached heap limit/i;

export interface DockerAdapterOptions {
  /** folders bound into the containers go under it: <workDir>/<sandboxId>/{workspace,files} */
  workDir: string;
  sidecarImage: string;
  agentImage: string;
  /** the Engine API socket; /var/run/docker.sock when absent */
  socketPath?: string;
  log?: Logger;
}

export interface DockerSandboxAdapter extends SandboxAdapter {
  readonly kind: 'docker';
  /** names of a running sandbox's containers and run network, for diagnostics and tests */
  containers(sandboxId: string): { sidecar: string; agent: string; network: string };
  /** the Engine API client the adapter uses */
  readonly docker: Docker;
  /** the egress network's gateway address (where the relays listen) */
  readonly gateway: string;
}

/** One program's stdio over an attached container: JSON lines out, JSON lines in. */
class AttachedProgram {
  private buffer = '';
  private readonly lines: Array<Record<string, unknown>> = [];
  private waiter: (() => void) | null = null;
  private listener: ((line: Record<string, unknown>) => void) | null = null;
  private ended = false;
  private stderr = '';
  /** the program's V8 heap ran out (its fatal error was printed) */
  heapExhausted = false;

  constructor(
    readonly label: string,
    private readonly stream: Duplex,
    docker: Docker,
  ) {
    const out = new PassThrough();
    const err = new PassThrough();
    docker.modem.demuxStream(stream, out, err);
    out.setEncoding('utf8').on('data', (chunk: string) => this.take(chunk));
    err.setEncoding('utf8').on('data', (chunk: string) => {
      // V8's fatal line comes before a long stack trace: look for it as it passes, not in the tail
      if (HEAP_EXHAUSTED.test(this.stderr.slice(-100) + chunk)) this.heapExhausted = true;
      this.stderr = (this.stderr + chunk).slice(-STDERR_TAIL_CHARS);
    });
    const end = () => {
      this.ended = true;
      this.waiter?.();
    };
    stream.on('end', end).on('close', end).on('error', end);
  }

  private take(chunk: string): void {
    this.buffer += chunk;
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      try {
        const parsed: unknown = JSON.parse(line);
        if (typeof parsed === 'object' && parsed !== null) this.lines.push(parsed as Record<string, unknown>);
      } catch {
        // not a handshake line
      }
    }
    if (this.buffer.length > 64 * 1024) this.buffer = '';
    if (this.listener) for (const line of this.lines.splice(0)) this.listener(line);
    else this.waiter?.();
  }

  nextLine(timeoutMs: number): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => settle(true), timeoutMs);
      const settle = (timedOut = false) => {
        const line = this.lines.shift();
        if (line) resolve(line);
        else if (this.ended) reject(new Error(`${this.label} exited: ${this.stderr.trim().slice(-1000)}`));
        else if (timedOut) reject(new Error(`${this.label} gave no answer within ${timeoutMs} ms: ${this.stderr.trim().slice(-1000)}`));
        else return;
        clearTimeout(timer);
        this.waiter = null;
      };
      this.waiter = () => settle();
      settle();
    });
  }

  watchLines(listener: (line: Record<string, unknown>) => void): void {
    this.listener = listener;
    for (const line of this.lines.splice(0)) listener(line);
  }

  send(message: unknown): void {
    if (!this.ended) this.stream.write(`${JSON.stringify(message)}\n`);
  }

  stderrTail(): string {
    return this.stderr;
  }

  /** lets go of the attach connection; the container's stdin stays open (StdinOnce is off) */
  detach(): void {
    this.stream.destroy();
  }
}

interface Known {
  runId: string;
  /** the sidecar announced it holds the run's end (seen on its stdout, or in its log after adoption) */
  endHeld: boolean;
  programs?: { sidecar: AttachedProgram; agent: AttachedProgram };
}

const names = (sandboxId: string) => ({
  sidecar: `ap-${sandboxId}-sidecar`,
  agent: `ap-${sandboxId}-agent`,
  network: `ap-${sandboxId}`,
  // interface names hold 15 bytes
  bridge: `apr${sandboxId.slice(4, 16)}`,
});

function isStatus(err: unknown, ...codes: number[]): boolean {
  return codes.includes((err as { statusCode?: number }).statusCode ?? 0);
}

async function ignoreMissing(op: Promise<unknown>): Promise<void> {
  try {
    await op;
  } catch (err) {
    if (!isStatus(err, 404, 409)) throw err;
  }
}

/** The egress network, created once for every run (labelled); answers its gateway address. */
async function ensureEgressNetwork(docker: Docker): Promise<string> {
  const inspect = async () => (await docker.getNetwork(EGRESS_NETWORK).inspect()) as { IPAM?: { Config?: Array<{ Gateway?: string }> } };
  let info;
  try {
    info = await inspect();
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
    await ignoreMissing(docker.createNetwork({
      Name: EGRESS_NETWORK,
      Driver: 'bridge',
      CheckDuplicate: true,
      Labels: { [LABEL_EGRESS]: 'true', [PROTOCOL_LABEL]: SANDBOX_PROTOCOL_VERSION },
      // sidecars of different runs do not talk to each other
      Options: { 'com.docker.network.bridge.name': EGRESS_BRIDGE, 'com.docker.network.bridge.enable_icc': 'false' },
    }));
    info = await inspect();
  }
  const gateway = info.IPAM?.Config?.find((c) => c.Gateway && !c.Gateway.includes(':'))?.Gateway;
  if (!gateway) throw new Error(`the ${EGRESS_NETWORK} network has no IPv4 gateway`);
  await relayHostRules(EGRESS_BRIDGE, gateway);
  return gateway;
}

/**
 * The sidecar's assignment with every loopback URL (the platform, a local model server) rewritten
 * to a relay on the egress gateway; the allowlist and the platform's endpoints follow the rewrite.
 */
async function relayedAssignment(assignment: SidecarAssignment, relays: LoopbackRelays): Promise<SidecarAssignment> {
  const viaRelay = async (raw: string | undefined): Promise<string | undefined> => {
    if (!raw) return raw;
    const url = new URL(raw);
    if (!isLoopbackHost(url.hostname)) return raw;
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
  const known = new Map<string, Known>();
  const stopping = new Map<string, Promise<void>>();
  let closed = false;

  const labels = (sandboxId: string, runId: string, role: string): Record<string, string> => ({
    [LABEL_SANDBOX]: sandboxId,
    [LABEL_RUN]: runId,
    [LABEL_ROLE]: role,
    [PROTOCOL_LABEL]: SANDBOX_PROTOCOL_VERSION,
  });

  const removeSandbox = async (sandboxId: string): Promise<void> => {
    const n = names(sandboxId);
    const entry = known.get(sandboxId);
    entry?.programs?.sidecar.detach();
    entry?.programs?.agent.detach();
    await Promise.all([n.agent, n.sidecar].map((name) => ignoreMissing(docker.getContainer(name).remove({ force: true, v: true }))));
    await ignoreMissing(docker.getNetwork(n.network).remove());
    await removeHostRules(n.bridge);
    await rm(path.join(workDir, sandboxId), { recursive: true, force: true });
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

  // Adoption: the pairs a previous worker left running are this adapter's now (their runs' workflows
  // re-attach by sandbox id; the reaper stops those whose run has ended). Their relays re-open on
  // the ports their URLs name.
  const found = await docker.listContainers({ all: true, filters: { label: [LABEL_SANDBOX] } });
  for (const c of found) {
    const sandboxId = c.Labels[LABEL_SANDBOX];
    if (!known.has(sandboxId)) known.set(sandboxId, { runId: c.Labels[LABEL_RUN] ?? '', endHeld: false });
    if (c.Labels[LABEL_RELAYS]) {
      for (const r of JSON.parse(c.Labels[LABEL_RELAYS]) as Array<{ target: string; port: number }>) {
        await relays.portFor(r.target, r.port).catch((err: Error) =>
          opts.log?.warn('a sandbox relay could not re-open on its port', { sandboxId, target: r.target, port: r.port, error: err.message }),
        );
      }
    }
  }
  // run networks whose containers are gone (a crash between the two): nothing to adopt
  for (const net of await docker.listNetworks({ filters: { label: [LABEL_SANDBOX] } })) {
    const sandboxId = net.Labels?.[LABEL_SANDBOX];
    if (sandboxId && !known.has(sandboxId)) await stop(sandboxId);
  }
  if (found.length) opts.log?.info('docker sandboxes adopted', { sandboxes: [...known.keys()] });

  const containerState = async (name: string): Promise<{ running: boolean; oomKilled: boolean; exitCode: number } | null> => {
    try {
      const info = await docker.getContainer(name).inspect();
      return { running: info.State.Running, oomKilled: info.State.OOMKilled, exitCode: info.State.ExitCode };
    } catch (err) {
      if (isStatus(err, 404)) return null;
      throw err;
    }
  };

  /** whether the sidecar's output holds its end-held line (an adopted pair has no attach stream to watch) */
  const endHeldInLog = async (sidecar: string): Promise<boolean> => {
    const log = (await docker.getContainer(sidecar).logs({ stdout: true, stderr: false, follow: false })) as Buffer;
    return log.toString('latin1').includes(`"${END_HELD}":true`);
  };

  const start = async (spec: SandboxSpec): Promise<{ sandboxId: string }> => {
    if (closed) throw new Error('the docker sandbox adapter is closed');
    checkWorkspacePaths(spec.workspace);
    const sandboxId = `sbx_${randomBase62(20)}`;
    const n = names(sandboxId);
    const dir = path.join(workDir, sandboxId);
    const entry: Known = { runId: spec.runId, endHeld: false };
    known.set(sandboxId, entry);
    try {
      const workspace = path.join(dir, 'workspace');
      const files = path.join(dir, 'files');
      await mkdir(workspace, { recursive: true });
      await mkdir(files, { recursive: true });
      await writeWorkspace(workspace, spec.workspace);
      await handOver(dir);
      const assignment = await relayedAssignment(spec.sidecar, relays);

      await docker.createNetwork({
        Name: n.network,
        Driver: 'bridge',
        Internal: true,
        CheckDuplicate: true,
        Labels: labels(sandboxId, spec.runId, 'network'),
        Options: { 'com.docker.network.bridge.name': n.bridge },
      });
      await closeHostPorts(n.bridge);

      const confinement = {
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Tmpfs: { '/tmp': 'rw,noexec,nosuid,size=64m' },
        // no restart: a program that exits ends its sandbox (the workflow sees it gone)
        RestartPolicy: { Name: '' },
      };
      const stdio = { OpenStdin: true, StdinOnce: false, AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: false };
      const heapMb = agentHeapMb(spec.limits.memoryMb);
      const sidecar = await docker.createContainer({
        name: n.sidecar,
        Image: opts.sidecarImage,
        Cmd: [`--max-old-space-size=${SIDECAR_HEAP_MB}`, '--max-semi-space-size=1', '/app/sidecar.cjs'],
        User: `${SANDBOX_UID}:${SANDBOX_UID}`,
        // the agent reaches it over the run network; the egress network lets no container talk to another
        Env: ['SIDECAR_LISTEN_HOST=0.0.0.0', 'HOME=/files', 'PATH=/usr/bin'],
        Labels: { ...labels(sandboxId, spec.runId, 'sidecar'), [LABEL_RELAYS]: JSON.stringify(relays.entries()) },
        ...stdio,
        HostConfig: {
          ...confinement,
          NetworkMode: EGRESS_NETWORK,
          Memory: SIDECAR_MEMORY_MB * 1024 * 1024,
          MemorySwap: SIDECAR_MEMORY_MB * 1024 * 1024,
          NanoCpus: 1e9,
          PidsLimit: SIDECAR_PIDS,
          Binds: [`${files}:/files:rw`],
        },
      });
      await docker.getNetwork(n.network).connect({ Container: sidecar.id, EndpointConfig: { Aliases: ['sidecar'] } });
      const agent = await docker.createContainer({
        name: n.agent,
        Image: opts.agentImage,
        Cmd: [`--max-old-space-size=${heapMb}`, '--max-semi-space-size=1', '/app/agent-runtime.cjs'],
        User: `${SANDBOX_UID}:${SANDBOX_UID}`,
        // the agent's environment names no secret and no setting
        Env: ['HOME=/workspace', 'PATH=/usr/bin'],
        WorkingDir: '/workspace',
        Labels: labels(sandboxId, spec.runId, 'agent'),
        ...stdio,
        HostConfig: {
          ...confinement,
          NetworkMode: n.network,
          Memory: spec.limits.memoryMb * 1024 * 1024,
          MemorySwap: spec.limits.memoryMb * 1024 * 1024,
          NanoCpus: Math.round(spec.limits.cpus * 1e9),
          PidsLimit: AGENT_PIDS,
          Binds: [`${workspace}:/workspace:rw`],
        },
      });

      const attach = async (container: Docker.Container, label: string) =>
        new AttachedProgram(label, (await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as Duplex, docker);
      const programs = { sidecar: await attach(sidecar, 'sidecar'), agent: await attach(agent, 'agent-runtime') };
      entry.programs = programs;
      await Promise.all([sidecar.start(), agent.start()]);

      const [sidecarReady, agentReady] = await Promise.all([programs.sidecar.nextLine(READY_TIMEOUT_MS), programs.agent.nextLine(READY_TIMEOUT_MS)]);
      const port = sidecarReady.port;
      if (sidecarReady.ready !== true || typeof port !== 'number' || agentReady.ready !== true) throw new Error('sandbox programs did not start: unexpected ready line');
      const sidecarNets = (await sidecar.inspect()).NetworkSettings.Networks as Record<string, { IPAddress?: string }>;
      const sidecarIp = sidecarNets[n.network]?.IPAddress;
      if (!sidecarIp) throw new Error('the sidecar has no address on its run network');

      const token = randomBytes(32).toString('base64url');
      programs.sidecar.send({ ...assignment, token, filesDir: '/files' });
      const ack = await programs.sidecar.nextLine(ASSIGN_TIMEOUT_MS);
      if (ack.assigned !== true) throw new Error('the sidecar did not take its assignment');
      programs.sidecar.watchLines((line) => {
        if (line[END_HELD] === true) entry.endHeld = true;
      });
      // confined: the agent's only way out is its sidecar; no shell (the image has none)
      programs.agent.send({ workspace: '/workspace', sidecarUrl: `http://${sidecarIp}:${port}`, sidecarToken: token, confined: true, shell: null });
      const egressIp = sidecarNets[EGRESS_NETWORK]?.IPAddress;
      if (egressIp) void reportMemoryOverrun(agent, programs.agent, `http://${egressIp}:${port}`, token, spec.limits.memoryMb, opts.log);
      opts.log?.debug('docker sandbox started', { runId: spec.runId, sandboxId });
      return { sandboxId };
    } catch (err) {
      await stop(sandboxId).catch(() => undefined);
      throw err;
    }
  };

  const state = async (sandboxId: string): Promise<SandboxState> => {
    if (stopping.has(sandboxId)) return 'gone';
    const n = names(sandboxId);
    const [sidecar, agent] = await Promise.all([containerState(n.sidecar), containerState(n.agent)]);
    if (!sidecar?.running) return 'gone';
    // a sandbox found after a restart is this adapter's from now on
    if (!known.has(sandboxId)) {
      const info = await docker.getContainer(n.sidecar).inspect();
      known.set(sandboxId, { runId: info.Config.Labels[LABEL_RUN] ?? '', endHeld: false });
    }
    const entry = known.get(sandboxId)!;
    if (!entry.endHeld && !entry.programs) entry.endHeld = await endHeldInLog(n.sidecar);
    if (entry.endHeld) return 'ending';
    return agent?.running ? 'running' : 'gone';
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
      return { sidecar: n.sidecar, agent: n.agent, network: n.network };
    },
  };
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
  const { readdir } = await import('node:fs/promises');
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
