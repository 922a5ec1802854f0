// The bridge of a local integration's container (docker backend; bundled to dist/mcp-bridge.cjs and
// shipped in the agent image): it starts the integration's stdio MCP server and lets one TCP
// connection at a time speak to it, newline-delimited JSON-RPC both ways. A connection's first line
// must be {"token": "<the run's token for this server>"}; it is answered {"bridge":"ready"} and
// then piped, or closed. A newer authenticated connection replaces the older one. The bridge ends
// with its server.
//   MCP_BRIDGE_CONFIG={"token", "port", "command": [argv], "cwd", "env": {NAME: value}}
import { spawn } from 'node:child_process';
import { createHash, timingSafeEqual } from 'node:crypto';
import net from 'node:net';

interface BridgeConfig {
  token: string;
  port: number;
  command: string[];
  cwd: string;
  env: Record<string, string>;
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
  const server = spawn(config.command[0], config.command.slice(1), {
    cwd: config.cwd,
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', ...config.env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  server.on('error', (err) => {
    process.stderr.write(`mcp-bridge: the server could not start: ${err.message}\n`);
    process.exit(127);
  });
  server.on('exit', (code, signal) => {
    process.stderr.write(`mcp-bridge: the server exited (${signal ?? code})\n`);
    process.exit(code ?? 1);
  });
  server.stdin.on('error', () => undefined);

  let current: net.Socket | null = null;
  // what the server says while no one is connected has no one to go to
  server.stdout.on('data', lines((line) => current?.write(Buffer.concat([line, Buffer.from('\n')]))));

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
        if (current === socket) server.stdin.write(Buffer.concat([line, Buffer.from('\n')]));
        return;
      }
      let token: unknown;
      try {
        token = (JSON.parse(line.toString('utf8')) as { token?: unknown }).token;
      } catch {
        token = undefined;
      }
      if (typeof token !== 'string' || !timingSafeEqual(digest(token), expected)) {
        socket.destroy();
        return;
      }
      clearTimeout(deadline);
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
