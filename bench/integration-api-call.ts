// api_call through the sidecar against a loopback upstream, beside a direct call to the same
// upstream in the same run: what the sidecar adds (MCP framing, target checks, credential
// injection, egress guard, scrubbing). The sidecar is the bundled program (`bin/start.mjs sidecar`);
// both clients keep their connections alive, as the agent runtime and the sidecar do.
// Target: the sidecar adds at most 2 ms at p50.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { newRunEventSecret } from '../lib/run-events.ts';
import { emit, ensureBundle, loadAverage, note, ROOT, round, spread } from './support.ts';

const WARMUP = 300;
const SAMPLES = Number(process.env.BENCH_API_CALL_SAMPLES ?? 3000);
const TARGET_P50_OVERHEAD_MS = 2;
const API_KEY = `sk-bench-${randomBytes(12).toString('hex')}`;

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function request(agent: http.Agent, url: URL, init: { method: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method, headers: init.headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

async function main(): Promise<void> {
  await ensureBundle();
  let upstreamSawKey = 0;
  const upstream = http.createServer((req, res) => {
    if (req.headers.authorization === `Bearer ${API_KEY}`) upstreamSawKey++;
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify({ id: 42, name: 'item', tags: ['a', 'b'] });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    });
  });
  const upstreamPort = await listen(upstream);
  // the event sink: accepts whatever the sidecar posts
  const sink = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(202, { 'content-type': 'application/json' }).end('{}'));
  });
  const sinkPort = await listen(sink);

  const sidecar = spawn(process.execPath, [path.join(ROOT, 'bin', 'start.mjs'), 'sidecar'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let pending = '';
  const waiters: Array<() => void> = [];
  sidecar.stdout!.on('data', (c: Buffer) => {
    pending += c.toString();
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      lines.push(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
      waiters.splice(0).forEach((w) => w());
    }
  });
  const nextLine = async (): Promise<Record<string, unknown>> => {
    while (lines.length === 0) await new Promise<void>((resolve) => waiters.push(resolve));
    return JSON.parse(lines.shift()!);
  };
  const ready = await nextLine();
  const token = randomBytes(32).toString('base64url');
  const upstreamUrl = `http://127.0.0.1:${upstreamPort}`;
  sidecar.stdin!.write(`${JSON.stringify({
    runId: 'run_bench',
    eventsUrl: `http://127.0.0.1:${sinkPort}/events`,
    eventSecret: newRunEventSecret(),
    token,
    model: null,
    outputSchema: null,
    runtimeTools: [],
    heartbeatSeconds: 600,
    egressAllowInternalHosts: [`127.0.0.1:${upstreamPort}`],
    integrations: [{
      packageId: '@bench/api',
      toolPrefix: 'bench_api',
      tools: ['api_call'],
      source: { kind: 'none' },
      authKey: 'default',
      connectionId: 'conn_bench',
      authorizedUris: [`${upstreamUrl}/api/*`],
      delivery: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.api_key}' },
      credentials: { api_key: API_KEY },
    }],
  })}\n`);
  const assigned = await nextLine();
  if (assigned.assigned !== true) throw new Error('the sidecar did not take its assignment');
  note(`sidecar on port ${ready.port}, upstream on ${upstreamPort}`);

  const mcpUrl = new URL(`http://127.0.0.1:${ready.port}/mcp`);
  const target = new URL(`${upstreamUrl}/api/items/42`);
  const sidecarAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const directAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const mcpHeaders = {
    authorization: `Bearer ${token}`,
    accept: 'application/json, text/event-stream',
    'content-type': 'application/json',
    'mcp-protocol-version': '2025-06-18',
  };
  let id = 0;
  const throughSidecar = async () => {
    const body = JSON.stringify({
      jsonrpc: '2.0', id: ++id, method: 'tools/call',
      params: { name: 'bench_api__api_call', arguments: { method: 'GET', url: target.href } },
    });
    const res = await request(sidecarAgent, mcpUrl, { method: 'POST', headers: { ...mcpHeaders, 'content-length': String(Buffer.byteLength(body)) }, body });
    if (res.status !== 200 || res.text.includes('"isError":true')) throw new Error(`api_call failed: ${res.status} ${res.text.slice(0, 300)}`);
  };
  const direct = async () => {
    const res = await request(directAgent, target, { method: 'GET', headers: { authorization: `Bearer ${API_KEY}` } });
    if (res.status !== 200) throw new Error(`direct call failed: ${res.status}`);
  };

  for (let i = 0; i < WARMUP; i++) {
    await throughSidecar();
    await direct();
  }
  const viaSidecar: number[] = [];
  const viaDirect: number[] = [];
  // interleaved, so both see the same machine load
  for (let i = 0; i < SAMPLES; i++) {
    let t = performance.now();
    await throughSidecar();
    viaSidecar.push(performance.now() - t);
    t = performance.now();
    await direct();
    viaDirect.push(performance.now() - t);
  }
  const sidecarMs = spread(viaSidecar);
  const directMs = spread(viaDirect);
  const overheadP50 = round(sidecarMs.p50 - directMs.p50, 2);
  emit({
    samples: SAMPLES,
    api_call_through_sidecar_ms: sidecarMs,
    direct_call_ms: directMs,
    sidecar_overhead_ms: { p50: overheadP50, p99: round(sidecarMs.p99 - directMs.p99, 2) },
    target_p50_overhead_ms: TARGET_P50_OVERHEAD_MS,
    within_target: overheadP50 <= TARGET_P50_OVERHEAD_MS,
    upstream_saw_injected_key: upstreamSawKey,
    load_average: loadAverage(),
  });

  sidecarAgent.destroy();
  directAgent.destroy();
  sidecar.stdin!.end();
  await new Promise((resolve) => sidecar.once('exit', resolve));
  upstream.closeAllConnections();
  sink.closeAllConnections();
  await Promise.all([new Promise((r) => upstream.close(r)), new Promise((r) => sink.close(r))]);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
