// What the docker backend asks the Engine for: the names and labels of a sandbox's parts, the
// shared egress network, a run's --internal networks (the agent's, and its local integrations'),
// and the containers' create options.
import type Docker from 'dockerode';
import { PROTOCOL_LABEL, SANDBOX_PROTOCOL_VERSION } from '../../lib/sandbox-protocol.ts';
import { relayHostRules } from './docker-network.ts';
import { SIDECAR_HEAP_MB } from './sandbox-pair.ts';

export const LABEL_SANDBOX = 'org.agent-platform.sandbox';
export const LABEL_RUN = 'org.agent-platform.run';
export const LABEL_ROLE = 'org.agent-platform.role';
/** instead of the run: a warm pool's pair, whose run is written in its folder when it is claimed (docker-adoption.ts) */
export const LABEL_POOLED = 'org.agent-platform.pooled';
/** on the sidecar: the relays (target, port) its URLs go through, re-opened by a worker that adopts it */
export const LABEL_RELAYS = 'org.agent-platform.relays';
const LABEL_EGRESS = 'org.agent-platform.egress';
/** on a local integration's container: the integration it serves */
export const LABEL_INTEGRATION = 'org.agent-platform.integration';
export const EGRESS_NETWORK = 'agent-platform-egress';
export const EGRESS_BRIDGE = 'ap-egress0';
/** the image's non-root user; the sandbox's folders are handed to it */
export const SANDBOX_UID = 10001;
/** where the sidecar keeps what a restarted worker must read (its held end), bound from <sandbox>/state */
export const SIDECAR_STATE_DIR = '/state';
const SIDECAR_MEMORY_MB = SIDECAR_HEAP_MB + 128;
const AGENT_PIDS = 128;
const SIDECAR_PIDS = 64;
const MCP_PIDS = 128;
/** where a local integration's bridge listens, inside its container */
export const MCP_BRIDGE_PORT = 7300;
/** where an mcp-server package's files are mounted (read-only), its command's working folder */
const MCP_SERVER_DIR = '/server';

export const names = (sandboxId: string) => ({
  sidecar: `ap-${sandboxId}-sidecar`,
  agent: `ap-${sandboxId}-agent`,
  network: `ap-${sandboxId}`,
  // interface names hold 15 bytes
  bridge: `apr${sandboxId.slice(4, 16)}`,
  /** the network of the run's local integrations' servers: theirs and the sidecar's only */
  mcpNetwork: `ap-${sandboxId}-mcp`,
  mcpBridge: `apm${sandboxId.slice(4, 16)}`,
  mcp: (index: number) => `ap-${sandboxId}-mcp${index}`,
});

export type SandboxNames = ReturnType<typeof names>;

/** runId null: a warm pool's pair, made before its run is known */
export const labels = (sandboxId: string, runId: string | null, role: string): Record<string, string> => ({
  [LABEL_SANDBOX]: sandboxId,
  ...(runId === null ? { [LABEL_POOLED]: 'true' } : { [LABEL_RUN]: runId }),
  [LABEL_ROLE]: role,
  [PROTOCOL_LABEL]: SANDBOX_PROTOCOL_VERSION,
});

export function isStatus(err: unknown, ...codes: number[]): boolean {
  return codes.includes((err as { statusCode?: number }).statusCode ?? 0);
}

export async function ignoreMissing(op: Promise<unknown>): Promise<void> {
  try {
    await op;
  } catch (err) {
    if (!isStatus(err, 404, 409)) throw err;
  }
}

/** The egress network, created once for every run (labelled); answers its gateway address. */
export async function ensureEgressNetwork(docker: Docker): Promise<string> {
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

export function runNetworkSpec(sandboxId: string, runId: string | null): Docker.NetworkCreateOptions {
  const n = names(sandboxId);
  return {
    Name: n.network,
    Driver: 'bridge',
    Internal: true,
    CheckDuplicate: true,
    Labels: labels(sandboxId, runId, 'network'),
    Options: { 'com.docker.network.bridge.name': n.bridge },
  };
}

/** The second --internal network of a run with local integrations: the sidecar and their servers. */
export function mcpNetworkSpec(sandboxId: string, runId: string): Docker.NetworkCreateOptions {
  const n = names(sandboxId);
  return {
    Name: n.mcpNetwork,
    Driver: 'bridge',
    Internal: true,
    CheckDuplicate: true,
    Labels: labels(sandboxId, runId, 'mcp-network'),
    Options: { 'com.docker.network.bridge.name': n.mcpBridge },
  };
}

const confinement = {
  ReadonlyRootfs: true,
  CapDrop: ['ALL'],
  SecurityOpt: ['no-new-privileges'],
  Tmpfs: { '/tmp': 'rw,noexec,nosuid,size=64m' },
  // no restart: a program that exits ends its sandbox (the workflow sees it gone)
  RestartPolicy: { Name: '' },
};
// StdinOnce off: stdin stays open when the worker that attached goes away, so the pair outlives it
const stdio = { OpenStdin: true, StdinOnce: false, AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: false };

export interface SidecarContainer {
  sandboxId: string;
  runId: string | null;
  image: string;
  /** host folders: the files it publishes, and its state a restarted worker reads */
  filesDir: string;
  stateDir: string;
  relays: Array<{ target: string; port: number }>;
}

export function sidecarContainerSpec(c: SidecarContainer): Docker.ContainerCreateOptions {
  return {
    name: names(c.sandboxId).sidecar,
    Image: c.image,
    Cmd: [`--max-old-space-size=${SIDECAR_HEAP_MB}`, '--max-semi-space-size=1', '/app/sidecar.cjs'],
    User: `${SANDBOX_UID}:${SANDBOX_UID}`,
    // the agent reaches it over the run network; the egress network lets no container talk to another
    Env: ['SIDECAR_LISTEN_HOST=0.0.0.0', `SIDECAR_STATE_DIR=${SIDECAR_STATE_DIR}`, 'HOME=/files', 'PATH=/usr/bin'],
    Labels: { ...labels(c.sandboxId, c.runId, 'sidecar'), [LABEL_RELAYS]: JSON.stringify(c.relays) },
    ...stdio,
    HostConfig: {
      ...confinement,
      NetworkMode: EGRESS_NETWORK,
      Memory: SIDECAR_MEMORY_MB * 1024 * 1024,
      MemorySwap: SIDECAR_MEMORY_MB * 1024 * 1024,
      NanoCpus: 1e9,
      PidsLimit: SIDECAR_PIDS,
      Binds: [`${c.filesDir}:/files:rw`, `${c.stateDir}:${SIDECAR_STATE_DIR}:rw`],
    },
  };
}

export interface AgentContainer {
  sandboxId: string;
  runId: string | null;
  image: string;
  workspaceDir: string;
  heapMb: number;
  limits: { memoryMb: number; cpus: number };
}

export function agentContainerSpec(c: AgentContainer): Docker.ContainerCreateOptions {
  const n = names(c.sandboxId);
  return {
    name: n.agent,
    Image: c.image,
    Cmd: [`--max-old-space-size=${c.heapMb}`, '--max-semi-space-size=1', '/app/agent-runtime.cjs'],
    User: `${SANDBOX_UID}:${SANDBOX_UID}`,
    // the agent's environment names no secret and no setting
    Env: ['HOME=/workspace', 'PATH=/usr/bin'],
    WorkingDir: '/workspace',
    Labels: labels(c.sandboxId, c.runId, 'agent'),
    ...stdio,
    HostConfig: {
      ...confinement,
      NetworkMode: n.network,
      ...ceilings(c.limits),
      PidsLimit: AGENT_PIDS,
      Binds: [`${c.workspaceDir}:/workspace:rw`],
    },
  };
}

/** A container's memory (no swap beyond it) and CPU ceilings. */
function ceilings(limits: { memoryMb: number; cpus: number }): Pick<Docker.HostConfig, 'Memory' | 'MemorySwap' | 'NanoCpus'> {
  const bytes = limits.memoryMb * 1024 * 1024;
  return { Memory: bytes, MemorySwap: bytes, NanoCpus: Math.round(limits.cpus * 1e9) };
}

export interface McpServerContainer {
  sandboxId: string;
  runId: string;
  index: number;
  image: string;
  packageId: string;
  /** host folder of the mcp-server package's files (mounted read-only), or null: the command is the image's */
  serverDir: string | null;
  /** what the bridge reads (bin/mcp-bridge.ts): its token and port, the server's argv and environment */
  bridge: { token: string; command: string[]; env: Record<string, string>; trust?: boolean };
  limits: { memoryMb: number; cpus: number };
}

/** A local integration's MCP server behind its bridge, confined like the agent, on the run's MCP network only. */
/** the sidecar's name on the run's MCP network: the host of the local servers' egress proxy URL */
export const SIDECAR_MCP_ALIAS = 'sidecar';

export function mcpServerContainerSpec(c: McpServerContainer): Docker.ContainerCreateOptions {
  const n = names(c.sandboxId);
  const cwd = c.serverDir ? MCP_SERVER_DIR : '/tmp';
  const config = { token: c.bridge.token, port: MCP_BRIDGE_PORT, command: c.bridge.command, cwd, env: c.bridge.env, ...(c.bridge.trust ? { trust: true } : {}) };
  return {
    name: n.mcp(c.index),
    Image: c.image,
    Entrypoint: ['/usr/bin/node'],
    Cmd: ['/app/mcp-bridge.cjs'],
    User: `${SANDBOX_UID}:${SANDBOX_UID}`,
    // the bridge takes its configuration out of its environment before it starts the server
    Env: [`MCP_BRIDGE_CONFIG=${JSON.stringify(config)}`, 'HOME=/tmp', 'PATH=/usr/bin'],
    WorkingDir: cwd,
    Labels: { ...labels(c.sandboxId, c.runId, 'mcp'), [LABEL_INTEGRATION]: c.packageId },
    AttachStdin: false,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    HostConfig: {
      ...confinement,
      NetworkMode: n.mcpNetwork,
      ...ceilings(c.limits),
      PidsLimit: MCP_PIDS,
      Binds: c.serverDir ? [`${c.serverDir}:${MCP_SERVER_DIR}:ro`] : [],
    },
  };
}
