// The MCP project's conformance suite (@modelcontextprotocol/conformance, server mode) against an
// organization's endpoint. The suite's client sends no credential, so it talks to a loopback relay
// that adds an API key's Authorization header and passes everything else through unchanged. The
// scenarios the endpoint fails, each for a reason given in docs/integrators.md ("The MCP endpoint"), are the suite's own baseline
// file (test/fixtures/mcp-conformance-expected-failures.yaml): a new failure, or a listed scenario
// that now passes, fails this test.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const SHIM = join(ROOT, 'test/support/conformance-node20.mjs');
const BASELINE = join(ROOT, 'test/fixtures/mcp-conformance-expected-failures.yaml');

let app: TestApp;
let relay: http.Server;
let relayUrl: string;
let out: string;

before(async () => {
  app = await startTestApp();
  const org = await anOrg(app.deps.database.pool);
  const { key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId });
  const target = new URL(app.url);
  relay = http.createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${key}` };
    const upstream = http.request({ hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}/api/mcp/o/${org.orgId}`;
  out = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
});
after(async () => {
  relay.closeAllConnections();
  await new Promise<void>((r) => relay.close(() => r()));
  await app.close();
  rmSync(out, { recursive: true, force: true });
});

function runSuite(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', SHIM, SUITE, 'server', '--url', relayUrl, '--expected-failures', BASELINE, '-o', out], {
      cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => { output += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { output += c.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** Each scenario's checks as the suite wrote them (<out>/<scenario>/checks.json). */
function results(): Map<string, Array<{ id: string; status: string; errorMessage?: string }>> {
  const found = new Map<string, Array<{ id: string; status: string; errorMessage?: string }>>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name === 'checks.json') found.set(dir.slice(out.length + 1), JSON.parse(readFileSync(path, 'utf8')));
    }
  };
  walk(out);
  return found;
}

test('the conformance suite passes against the endpoint, but for the failures docs/integrators.md lists with their reasons', { timeout: 300_000 }, async (t) => {
  const { code, output } = await runSuite();
  const scenarios = results();
  for (const [name, checks] of scenarios) {
    const failed = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    t.diagnostic(`${name}: ${failed.length ? `FAILED ${failed.map((c) => `${c.id} (${c.errorMessage ?? `${c.status} ${JSON.stringify((c as { details?: unknown }).details ?? {}).slice(0, 300)}`})`).join('; ')}` : 'passed'}`);
  }
  assert.ok(scenarios.size > 10, `the suite ran its scenarios:\n${output.slice(-3000)}`);
  for (const core of ['server-initialize', 'ping', 'tools-list']) {
    const key = [...scenarios.keys()].find((k) => k.startsWith(`server-${core}-`));
    assert.ok(key, `${core} ran`);
    assert.ok(scenarios.get(key)!.every((c) => c.status !== 'FAILURE'), `${core} passes`);
  }
  assert.equal(code, 0, `the suite's baseline check (no unexpected failure, no stale entry):\n${output.slice(-3000)}`);
});
