// The bridge of a local integration's container (bin/mcp-bridge.ts), on 127.0.0.1: a connection
// must present the token first, then speaks JSON-RPC lines with the server; a newer authenticated
// connection replaces the older; a silent one is dropped; the bridge ends with its server.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE_DIR = fileURLToPath(new URL('../fixtures/local-mcp-server/', import.meta.url));
const TOKEN = 'k'.repeat(43);

function startBridge(command: string[], trust = false): { child: ChildProcess; port: Promise<number> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/mcp-bridge.ts'], {
    cwd: REPO,
    env: { ...process.env, MCP_BRIDGE_CONFIG: JSON.stringify({ token: TOKEN, port: 0, command, cwd: FIXTURE_DIR, env: { GREETING: 'hi' }, ...(trust ? { trust: true } : {}) }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const port = new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(JSON.parse(d.toString()).port));
    child.once('exit', (code) => reject(new Error(`the bridge exited (${code})`)));
  });
  return { child, port };
}

/** A client of the bridge: what it received, line by line, and whether it was closed. */
function aClient(port: number) {
  const socket = net.connect({ host: '127.0.0.1', port });
  const lines: string[] = [];
  let closed = false;
  let buffer = '';
  socket.setEncoding('utf8').on('data', (c: string) => {
    buffer += c;
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      lines.push(buffer.slice(0, i));
      buffer = buffer.slice(i + 1);
    }
  });
  socket.on('close', () => (closed = true)).on('error', () => undefined);
  return {
    lines, socket,
    get closed() { return closed; },
    send: (message: unknown) => socket.write(`${JSON.stringify(message)}\n`),
  };
}

async function until(check: () => boolean, ms = 8000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const call = (id: number, text: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text } } });

describe('the MCP bridge', () => {
  const started: ChildProcess[] = [];
  after(() => started.forEach((c) => c.kill()));

  test('a wrong token is closed unanswered; the token opens the server; a newer connection replaces the older', async () => {
    const bridge = startBridge(['node', 'server.cjs']);
    started.push(bridge.child);
    const port = await bridge.port;

    const intruder = aClient(port);
    intruder.send({ token: 'x'.repeat(43) });
    intruder.send(call(1, 'intruder'));
    await until(() => intruder.closed);
    assert.deepEqual(intruder.lines, []);

    const first = aClient(port);
    first.send({ token: TOKEN });
    first.send(call(2, 'first'));
    await until(() => first.lines.length === 2);
    assert.equal(first.lines[0], '{"bridge":"ready"}');
    assert.deepEqual(JSON.parse(first.lines[1]), { jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: 'hi: first' }] } });

    const second = aClient(port);
    second.send({ token: TOKEN });
    await until(() => first.closed && second.lines.length === 1);
    second.send(call(3, 'second'));
    await until(() => second.lines.length === 2);
    assert.equal(JSON.parse(second.lines[1]).result.content[0].text, 'hi: second');
  });

  test("with trust, the server starts once the first connection names the run's authority, its runtime pointed at it and at a bundle holding it", async () => {
    const { createRunCa } = await import('../../sidecar/run-ca.ts');
    const { readFileSync } = await import('node:fs');
    const ca = await createRunCa();
    const bridge = startBridge(['node', 'server.cjs'], true);
    started.push(bridge.child);
    const port = await bridge.port;
    const client = aClient(port);
    client.send({ token: TOKEN, trust: ca.certPem });
    client.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'environment', arguments: {} } });
    await until(() => client.lines.length === 2);
    const env = JSON.parse(JSON.parse(client.lines[1]).result.content[0].text).env as Record<string, string>;
    assert.equal(env.NODE_EXTRA_CA_CERTS, '/tmp/agent-platform-trust/run-ca.pem');
    assert.equal(env.SSL_CERT_FILE, '/tmp/agent-platform-trust/ca-bundle.pem');
    assert.equal(env.REQUESTS_CA_BUNDLE, env.SSL_CERT_FILE);
    assert.equal(readFileSync(env.NODE_EXTRA_CA_CERTS, 'utf8'), ca.certPem.endsWith('\n') ? ca.certPem : `${ca.certPem}\n`);
    const bundle = readFileSync(env.SSL_CERT_FILE, 'utf8');
    assert.ok(bundle.endsWith(readFileSync(env.NODE_EXTRA_CA_CERTS, 'utf8')));
    assert.ok((bundle.match(/BEGIN CERTIFICATE/g) ?? []).length > 1, 'the system authorities and the run one');
    (await import('node:fs')).rmSync('/tmp/agent-platform-trust', { recursive: true, force: true });
  });

  test('a connection that says nothing is dropped', async () => {
    const bridge = startBridge(['node', 'server.cjs']);
    started.push(bridge.child);
    const silent = aClient(await bridge.port);
    await until(() => silent.closed, 8000);
    assert.deepEqual(silent.lines, []);
  });

  test('the bridge ends with its server, with its exit code', async () => {
    const bridge = startBridge(['node', '-e', 'setTimeout(() => process.exit(3), 300)']);
    started.push(bridge.child);
    await bridge.port;
    const code = await new Promise((resolve) => bridge.child.once('exit', resolve));
    assert.equal(code, 3);
  });
});
