import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { arch, platform } from 'node:os';
import { dirname, resolve as resolvePath } from 'node:path';
import { boundToParent } from '../lib/parent-bound.ts';

export interface RestateServerOptions {
  /** Data directory; the same directory (and ports) after a restart finds the same invocations. */
  baseDir: string;
  ingressPort: number;
  adminPort: number;
  /** Node-to-node (message fabric) port; also serves the server's metrics. */
  nodePort: number;
  /** Append the server's stdout and stderr here; otherwise only the last lines are kept for errors. */
  logFile?: string;
  /** Stable node name: the data lives under baseDir/<nodeName>, so it must not change between starts. */
  nodeName?: string;
  /** How long to wait for the server to answer its health checks (ms). */
  startTimeoutMs?: number;
  /**
   * An Ed25519 private key (PKCS#8 PEM file) the server signs its requests to service endpoints
   * with; an endpoint given the public key (restate/request-identity.ts) refuses any other caller.
   */
  requestIdentityKeyFile?: string;
  /**
   * Run as one node of a Restate cluster (the engine's own clustering: replicated metadata server
   * and replicated log). Every node of the cluster gets the same name and metadata addresses, its own
   * nodeName, baseDir and ports; exactly one node provisions the cluster.
   */
  cluster?: RestateClusterOptions;
}

export interface RestateClusterOptions {
  /** the same on every node: a node refuses to join another cluster */
  name: string;
  /** the node-to-node addresses (http://host:nodePort) of the metadata servers, every node included */
  metadataAddresses: string[];
  /** true on exactly one node: it writes the cluster's first configuration once enough nodes answer */
  autoProvision: boolean;
  /** how many nodes hold each log record and partition (2 of 3 survives losing any one node) */
  replication: number;
  /** the engine's partitions, fixed when the cluster is provisioned (unset: the engine's default) */
  partitions?: number;
}

/** The settings that make a restate-server a node of a cluster (RESTATE_* environment, the server's own names). */
export function clusterEnvironment(cluster: RestateClusterOptions): Record<string, string> {
  return {
    RESTATE_CLUSTER_NAME: cluster.name,
    RESTATE_AUTO_PROVISION: String(cluster.autoProvision),
    RESTATE_DEFAULT_REPLICATION: String(cluster.replication),
    RESTATE_METADATA_CLIENT__ADDRESSES: JSON.stringify(cluster.metadataAddresses),
    RESTATE_METADATA_SERVER__TYPE: 'replicated',
    RESTATE_BIFROST__DEFAULT_PROVIDER: 'replicated',
    RESTATE_ROLES: JSON.stringify(['metadata-server', 'admin', 'worker', 'log-server', 'http-ingress']),
    ...(cluster.partitions ? { RESTATE_DEFAULT_NUM_PARTITIONS: String(cluster.partitions) } : {}),
  };
}

export interface RestateServer {
  ingressUrl: string;
  adminUrl: string;
  pid: number;
  /** Time from spawn to both health checks answering (ms). */
  startedInMs: number;
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
const STOP_GRACE_MS = 5_000;
const HEALTH_POLL_MS = 20;
const LOG_TAIL_LINES = 40;

/** Path of the restate-server binary shipped by the platform package of @restatedev/restate-server. */
export function restateServerBinary(): string {
  const binaryPackage = `@restatedev/restate-server-${platform()}-${arch()}`;
  const fromHere = createRequire(import.meta.url);
  // The platform package is an optional dependency of the launcher package; resolve it from
  // there first so a nested install is found too, then from our own node_modules.
  const attempts: Array<() => string> = [
    () => createRequire(fromHere.resolve('@restatedev/restate-server/package.json')).resolve(`${binaryPackage}/bin/restate-server`),
    () => fromHere.resolve(`${binaryPackage}/bin/restate-server`),
  ];
  for (const attempt of attempts) {
    try {
      return attempt();
    } catch {
      // try the next location
    }
  }
  throw new Error(`restate-server binary not found: is ${binaryPackage} installed (optional dependency of @restatedev/restate-server)?`);
}

/** Starts restate-server bound to 127.0.0.1 on the given ports and waits until it is healthy. */
export async function startRestateServer(opts: RestateServerOptions): Promise<RestateServer> {
  const baseDir = resolvePath(opts.baseDir);
  mkdirSync(baseDir, { recursive: true });
  const nodeName = opts.nodeName ?? 'platform';
  const ingressUrl = `http://${HOST}:${opts.ingressPort}`;
  const adminUrl = `http://${HOST}:${opts.adminPort}`;

  const args = [
    '--base-dir', baseDir,
    '--node-name', nodeName,
    '--bind-address', `${HOST}:${opts.nodePort}`,
    '--advertised-address', `http://${HOST}:${opts.nodePort}/`,
    '--listen-mode', 'tcp',
    '--no-logo',
    '--log-disable-ansi-codes', 'true',
  ];
  const env: NodeJS.ProcessEnv = {};
  // Inherited RESTATE_* settings could move a listener off loopback; ours are the only ones.
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('RESTATE_')) env[key] = value;
  }
  Object.assign(env, {
    RESTATE_INGRESS__BIND_ADDRESS: `${HOST}:${opts.ingressPort}`,
    RESTATE_INGRESS__ADVERTISED_INGRESS_ENDPOINT: `${ingressUrl}/`,
    RESTATE_ADMIN__BIND_ADDRESS: `${HOST}:${opts.adminPort}`,
    RESTATE_ADMIN__ADVERTISED_ADMIN_ENDPOINT: `${adminUrl}/`,
    RESTATE_DISABLE_TELEMETRY: 'true',
    ...(opts.requestIdentityKeyFile ? { RESTATE_WORKER__INVOKER__REQUEST_IDENTITY_PRIVATE_KEY_PEM_FILE: resolvePath(opts.requestIdentityKeyFile) } : {}),
    ...(opts.cluster ? clusterEnvironment(opts.cluster) : {}),
  });

  // Health checks would otherwise be answered by whatever already holds a port.
  await assertPortsFree([opts.ingressPort, opts.adminPort, opts.nodePort]);
  const output = openOutput(opts.logFile);
  const startedAt = performance.now();
  // bound to this process: if it dies, however, the kernel asks the server to shut down
  const run = boundToParent(...offlineCommand(baseDir, restateServerBinary(), args), 'SIGTERM');
  const child = spawn(run.command, run.args, {
    cwd: baseDir,
    env,
    // its own process group: a terminal's Ctrl-C reaches the platform, which stops it after draining
    detached: true,
    stdio: ['ignore', output.fd ?? 'pipe', output.fd ?? 'pipe'],
  });
  if (output.fd !== undefined) closeSync(output.fd);
  const tail = output.fd === undefined ? keepTail(child) : () => readTail(opts.logFile!);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const killOnParentExit = () => child.kill('SIGKILL');
  process.once('exit', killOnParentExit);

  const stop = async () => {
    process.removeListener('exit', killOnParentExit);
    await stopChild(child, exited);
  };

  try {
    await waitUntilHealthy([`${adminUrl}/health`, `${ingressUrl}/restate/health`], exited, opts.startTimeoutMs ?? 30_000);
  } catch (err) {
    await stop();
    throw new Error(`restate-server did not start: ${(err as Error).message}\n${tail()}`);
  }
  return { ingressUrl, adminUrl, pid: child.pid!, startedInMs: Math.round(performance.now() - startedAt), stop };
}

async function assertPortsFree(ports: number[]): Promise<void> {
  for (const port of ports) {
    await new Promise<void>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', (err: NodeJS.ErrnoException) =>
        reject(new Error(`restate-server cannot start: port ${HOST}:${port} is in use (${err.code})`)));
      probe.listen(port, HOST, () => probe.close(() => resolve()));
    });
  }
}

function openOutput(logFile: string | undefined): { fd?: number } {
  if (logFile === undefined) return {};
  mkdirSync(dirname(resolvePath(logFile)), { recursive: true });
  return { fd: openSync(logFile, 'a') };
}

function keepTail(child: ChildProcess): () => string {
  const lines: string[] = [];
  const collect = (chunk: Buffer) => {
    lines.push(...chunk.toString('utf8').split('\n'));
    if (lines.length > LOG_TAIL_LINES) lines.splice(0, lines.length - LOG_TAIL_LINES);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  return () => lines.join('\n');
}

function readTail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-LOG_TAIL_LINES).join('\n');
  } catch {
    return '';
  }
}

async function waitUntilHealthy(urls: string[], exited: Promise<number | null>, timeoutMs: number): Promise<void> {
  let exitCode: number | null | undefined;
  void exited.then((code) => { exitCode = code; });
  const deadline = performance.now() + timeoutMs;
  const pending = new Set(urls);
  while (pending.size > 0) {
    if (exitCode !== undefined) throw new Error(`process exited with code ${exitCode}`);
    if (performance.now() > deadline) throw new Error(`no healthy answer from ${[...pending].join(', ')} within ${timeoutMs} ms`);
    for (const url of [...pending]) {
      if (await answersOk(url)) pending.delete(url);
    }
    if (pending.size > 0) await new Promise((r) => setTimeout(r, HEALTH_POLL_MS));
  }
}

async function answersOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), STOP_GRACE_MS).unref());
  if ((await Promise.race([exited, timer])) === 'timeout') {
    child.kill('SIGKILL');
    await exited;
  }
}

/**
 * The server looks up its vendor's release feed at every start, and no setting turns that off.
 * Where we can (root on Linux, with unshare), it runs in its own mount namespace whose resolver
 * is 127.0.0.1, so the lookup fails on this machine and nothing leaves it.
 */
export function offlineCommand(baseDir: string, binary: string, args: string[]): [string, string[]] {
  const unshare = ['/usr/bin/unshare', '/bin/unshare'].find((p) => existsSync(p));
  if (platform() !== 'linux' || process.getuid?.() !== 0 || !unshare) return [binary, args];
  const resolv = resolvePath(baseDir, 'resolv.conf');
  writeFileSync(resolv, 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n');
  const quoted = [binary, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return [unshare, ['--mount', 'sh', '-c', `mount --bind '${resolv}' /etc/resolv.conf && exec ${quoted}`]];
}
