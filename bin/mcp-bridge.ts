// The bridge of a local integration's container (docker backend; bundled to dist/mcp-bridge.cjs and
// shipped in the agent image): it starts the integration's stdio MCP server and lets one TCP
// connection at a time speak to it, newline-delimited JSON-RPC both ways. A connection's first line
// must be {"token": "<the run's token for this server>"}; it is answered {"bridge":"ready"} and
// then piped, or closed. A newer authenticated connection replaces the older one. The bridge ends
// with its server.
// With "trust": true (the sidecar injects the server's credential over HTTPS), the server starts
// only once the first authenticated connection has said which certificate authority its runtime
// trusts ({"token", "trust": "<PEM>"}: the sidecar's per-run authority): the bridge writes it to
// /tmp, beside a bundle of the system's authorities with it, and starts the server with
// NODE_EXTRA_CA_CERTS (the authority), SSL_CERT_FILE and REQUESTS_CA_BUNDLE (the bundle) set.
//   MCP_BRIDGE_CONFIG={"token", "port", "command": [argv], "cwd", "env": {NAME: value}, "trust"?}
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createHash, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';

interface BridgeConfig {
  token: string;
  port: number;
  command: string[];
  cwd: string;
  env: Record<string, string>;
  /** start the server only once the sidecar named the authority its runtime trusts */
  trust?: boolean;
}

/** where the run's authority and the bundle holding it are written (the container's /tmp, its own) */
const TRUST_DIR = '/tmp/agent-platform-trust';
/** the system's authorities, where the images this runs in keep them */
const SYSTEM_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem'];
const PEM_CERTIFICATE = /^-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----\r?\n?$/;

/** Writes the authority and the bundle; the variables that point a runtime at them. */
function trustFiles(pem: string): Record<string, string> {
  mkdirSync(TRUST_DIR, { recursive: true, mode: 0o700 });
  const ca = path.join(TRUST_DIR, 'run-ca.pem');
  const bundle = path.join(TRUST_DIR, 'ca-bundle.pem');
  writeFileSync(ca, pem.endsWith('\n') ? pem : `${pem}\n`, { mode: 0o600 });
  const system = SYSTEM_BUNDLES.find((p) => existsSync(p));
  writeFileSync(bundle, `${system ? readFileSync(system, 'utf8').replace(/\n?$/, '\n') : ''}${readFileSync(ca, 'utf8')}`, { mode: 0o600 });
  return { NODE_EXTRA_CA_CERTS: ca, SSL_CERT_FILE: bundle, REQUESTS_CA_BUNDLE: bundle };
}

const HANDSHAKE_MS = 5_000;
/** a line longer than this is dropped, not buffered without end */
const MAX_LINE_BYTES = 32 * 1024 * 1024;

function readConfig(): BridgeConfig {
  const raw = process.env.MCP_BRIDGE_CONFIG;
  // the server is started with an environment of its own; the token stays with the bridge
  delete process.env.MCP_BRIDGE_CONFIG;
  const c = JSON.parse(raw ?? 'null') as BridgeConfig | null;
  if (!c || typeof c.token !== 'string' || c.token.length < 32 || !Number.isInteger(c.port) || !Array.isArray(c.command) || c.command.length === 0) {
    throw new Error('MCP_BRIDGE_CONFIG must hold token, port and command');
  }
  return c;
}

/** Splits a byte stream into lines, handing each complete one on (an overlong one is dropped). */
function lines(onLine: (line: Buffer) => void): (chunk: Buffer) => void {
  let pending: Buffer[] = [];
  let size = 0;
  let overlong = false;
  return (chunk) => {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
      const tail = chunk.subarray(start, nl);
      if (!overlong) onLine(pending.length ? Buffer.concat([...pending, tail]) : tail);
      pending = [];
      size = 0;
      overlong = false;
      start = nl + 1;
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0 || overlong) return;
    size += rest.length;
    if (size > MAX_LINE_BYTES) {
      overlong = true;
      pending = [];
      return;
    }
    pending.push(Buffer.from(rest));
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

function main(): void {
  const config = readConfig();
  const expected = digest(config.token);
  let server: ChildProcessByStdio<Writable, Readable, null> | null = null;
  let current: net.Socket | null = null;

  const start = (extraEnv: Record<string, string>): void => {
    const child = spawn(config.command[0], config.command.slice(1), {
      cwd: config.cwd,
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', ...config.env, ...extraEnv },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    server = child;
    child.on('error', (err) => {
      process.stderr.write(`mcp-bridge: the server could not start: ${err.message}\n`);
      process.exit(127);
    });
    child.on('exit', (code, signal) => {
      process.stderr.write(`mcp-bridge: the server exited (${signal ?? code})\n`);
      process.exit(code ?? 1);
    });
    child.stdin.on('error', () => undefined);
    // what the server says while no one is connected has no one to go to
    child.stdout.on('data', lines((line) => current?.write(Buffer.concat([line, Buffer.from('\n')]))));
  };
  if (!config.trust) start({});

  const listener = net.createServer((socket) => {
    let authenticated = false;
    const deadline = setTimeout(() => socket.destroy(), HANDSHAKE_MS);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(deadline);
      if (current === socket) current = null;
    });
    socket.on('data', lines((line) => {
      if (authenticated) {
        if (current === socket) server?.stdin.write(Buffer.concat([line, Buffer.from('\n')]));
        return;
      }
      let hello: { token?: unknown; trust?: unknown } = {};
      try {
        const parsed: unknown = JSON.parse(line.toString('utf8'));
        if (typeof parsed === 'object' && parsed !== null) hello = parsed as typeof hello;
      } catch {
        hello = {};
      }
      if (typeof hello.token !== 'string' || !timingSafeEqual(digest(hello.token), expected)) {
        socket.destroy();
        return;
      }
      clearTimeout(deadline);
      if (!server) {
        // the first authenticated connection names the authority (or none: the server starts without)
        let extra: Record<string, string> = {};
        if (typeof hello.trust === 'string' && PEM_CERTIFICATE.test(hello.trust)) {
          try {
            extra = trustFiles(hello.trust);
          } catch (err) {
            process.stderr.write(`mcp-bridge: the run's certificate authority could not be written: ${(err as Error).message}\n`);
          }
        }
        start(extra);
      }
      authenticated = true;
      current?.destroy();
      current = socket;
      socket.write('{"bridge":"ready"}\n');
    }));
  });
  listener.listen(config.port, '0.0.0.0', () => {
    process.stdout.write(`${JSON.stringify({ ready: true, port: (listener.address() as net.AddressInfo).port })}\n`);
  });
}

try {
  main();
} catch (err) {
  process.stderr.write(`mcp-bridge: ${(err as Error).message}\n`);
  process.exit(2);
}
