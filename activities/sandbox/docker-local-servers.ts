// The local integrations of a docker sandbox (source.kind local): each one's stdio MCP server runs in
// a container of its own, confined like the agent, behind the bridge of the agent image
// (bin/mcp-bridge.ts). Their network is a second --internal network of the run whose only other
// member is the sidecar: the agent (on the first one) cannot reach them, they reach nothing else,
// and the host's ports are closed to its bridge. The sidecar connects to each bridge with a token
// of its own, per server. A server's one way out is the sidecar's egress proxy (its alias `sidecar`
// on that network), named by the standard proxy variables with a secret of its own: it reaches its
// integration's authorized_uris through it, under the egress guard, and nothing else.
import { randomBytes } from 'node:crypto';
import { localEgressEnv } from '../../lib/afps/integration-assignment.ts';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { LocalIntegrationAssignment, LocalServerSpec } from './adapter.ts';
import { AttachedProgram } from './docker-attached-program.ts';
import { closeHostPorts } from './docker-network.ts';
import { MCP_BRIDGE_PORT, mcpNetworkSpec, mcpServerContainerSpec, names, SIDECAR_MCP_ALIAS } from './docker-specs.ts';
import { writeWorkspace } from './workspace-writer.ts';

const READY_TIMEOUT_MS = 30_000;

/** The image a local server runs in: its own when the operator allows it, else the agent image; throws for another. */
export function serverImage(server: LocalServerSpec, agentImage: string, allowedImages: string[]): string {
  if (server.image === null || server.image === agentImage) return agentImage;
  if (!allowedImages.includes(server.image)) {
    throw new Error(`${server.packageId} names the image ${server.image}, which LOCAL_INTEGRATION_IMAGES does not allow`);
  }
  return server.image;
}

const serverDir = (sandboxDir: string, index: number) => path.join(sandboxDir, 'servers', String(index));

/** Writes each mcp-server package's files under <sandbox>/servers/<index> (handed to the sandbox user with the rest). */
export async function writeServerFiles(sandboxDir: string, servers: LocalServerSpec[]): Promise<void> {
  for (const [index, server] of servers.entries()) {
    if (!server.files) continue;
    await mkdir(serverDir(sandboxDir, index), { recursive: true });
    await writeWorkspace(serverDir(sandboxDir, index), server.files);
  }
}

/** The run's MCP network, closed to the host; the sidecar joins it before it starts. */
export async function createMcpNetwork(docker: Docker, sandboxId: string, runId: string): Promise<void> {
  const n = names(sandboxId);
  await docker.createNetwork(mcpNetworkSpec(sandboxId, runId));
  await closeHostPorts(n.mcpBridge);
}

export interface StartedServers {
  /** resolves with the sidecar's entries once every bridge listens */
  ready: Promise<LocalIntegrationAssignment[]>;
}

/**
 * Creates and starts each server's container; `ready` answers their bridges' addresses and tokens
 * once each has said it listens (or fails naming the integration whose server did not start).
 */
export async function startLocalServers(docker: Docker, opts: {
  sandboxId: string;
  runId: string;
  sandboxDir: string;
  servers: LocalServerSpec[];
  agentImage: string;
  allowedImages: string[];
  limits: { memoryMb: number; cpus: number };
}): Promise<StartedServers> {
  const n = names(opts.sandboxId);
  const started = await Promise.all(opts.servers.map(async (server, index) => {
    const token = randomBytes(32).toString('base64url');
    const egress = { secret: randomBytes(32).toString('base64url'), authorizedUris: server.authorizedUris ?? [] };
    const container = await docker.createContainer(mcpServerContainerSpec({
      sandboxId: opts.sandboxId, runId: opts.runId, index, packageId: server.packageId,
      image: serverImage(server, opts.agentImage, opts.allowedImages),
      serverDir: server.files ? serverDir(opts.sandboxDir, index) : null,
      // the proxy variables last: the manifest cannot point the server elsewhere
      bridge: { token, command: server.command, env: { ...server.env, ...localEgressEnv(SIDECAR_MCP_ALIAS, egress.secret) }, ...(server.trustRunCa ? { trust: true } : {}) },
      limits: opts.limits,
    }));
    const stream = (await container.attach({ stream: true, stdout: true, stderr: true })) as unknown as Duplex;
    const program = new AttachedProgram(`the MCP server of ${server.packageId}`, stream, docker);
    await container.start();
    return { server, token, egress, container, program };
  }));
  const ready = Promise.all(started.map(async ({ server, token, egress, container, program }): Promise<LocalIntegrationAssignment> => {
    try {
      const line = await program.nextLine(READY_TIMEOUT_MS);
      if (line.ready !== true) throw new Error(`the MCP server of ${server.packageId} did not start: unexpected ready line`);
      const networks = (await container.inspect()).NetworkSettings.Networks as Record<string, { IPAddress?: string }>;
      const host = networks[n.mcpNetwork]?.IPAddress;
      if (!host) throw new Error(`the MCP server of ${server.packageId} has no address on its network`);
      return { packageId: server.packageId, toolPrefix: server.toolPrefix, tools: server.tools, bridge: { host, port: MCP_BRIDGE_PORT, token }, egress };
    } finally {
      // the server's later output stays in its container's log; nothing here reads it
      program.detach();
    }
  }));
  // a failure is the caller's to see through `ready`; not an unhandled rejection meanwhile
  ready.catch(() => undefined);
  return { ready };
}
