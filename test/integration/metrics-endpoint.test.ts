// The operator's metrics: off unless asked (nothing loaded, no listener); asked, a listener on
// loopback serving GET /metrics in Prometheus text that an independent parser reads; a started
// platform's run and API figures move as a run is launched and ends, with no tenant id in a label.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { cachedReader, metrics, startMetrics } from '../../lib/metrics/index.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { client } from '../support/http.ts';
import { freePort, startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture, waitForStatus } from '../support/runs.ts';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

type Families = ReturnType<typeof parsePrometheusTextFormat>;

async function scrape(url: string): Promise<{ text: string; families: Families }> {
  const res = await fetch(url);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  return { text, families: parsePrometheusTextFormat(text) };
}

/** The sum of a family's samples whose labels include `where` (0 when none has been counted yet). */
function figure(families: Families, name: string, where: Record<string, string> = {}): number {
  const family = families.find((f) => f.name === name);
  if (!family) return 0;
  return family.metrics
    .filter((m) => Object.entries(where).every(([k, v]) => m.labels?.[k] === v))
    .reduce((sum, m) => sum + Number(m.value ?? m.count ?? 0), 0);
}

/**
 * A histogram series' _count from the text itself: the independent parser keeps one series per
 * histogram family (it folds labelled series together), so the counts are read off their lines.
 */
function observations(text: string, histogram: string, where: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${histogram}_count(?:\\{(.*)\\})? (\\S+)$`).exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[1] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(where).every(([k, v]) => labels[k] === v)) total += Number(m[2]);
  }
  return total;
}

const otelLoaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('@opentelemetry/sdk-metrics'));
const nonLoopbackAddress = () => Object.values(os.networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

test('metrics are off by default: nothing is loaded and no listener starts', async () => {
  const config = loadConfig({ NODE_ENV: 'test' });
  assert.equal(config.METRICS_PORT, undefined);
  assert.equal(await startMetrics(config, createLogger('silent')), null);
  assert.equal(metrics.enabled, false);
  assert.equal(otelLoaded(), false, 'the OpenTelemetry SDK was loaded with metrics off');
  // counting while off is a no-op, not an error
  metrics.runLaunched('agent');
  // the platform runs from its bundle (made by the start in before()): the metrics SDK must not be imported at its top
  const bundle = fs.readFileSync(path.join(root, 'dist/platform.js'), 'utf8');
  assert.doesNotMatch(bundle, /^import [^;]* from "@opentelemetry\/(sdk-metrics|exporter-metrics-otlp-http)";/m);
  assert.match(bundle, /await import\("@opentelemetry\/sdk-metrics"\)/);
});

test('the listener binds to loopback by default and answers anything but GET /metrics with a problem', async () => {
  const port = await freePort();
  const handle = await startMetrics(loadConfig({ NODE_ENV: 'test', METRICS_PORT: String(port) }), createLogger('silent'));
  try {
    assert.equal(handle?.url, `http://127.0.0.1:${port}/metrics`);
    assert.equal(metrics.enabled, true);
    const other = nonLoopbackAddress();
    if (other) {
      const refused = await new Promise<string>((resolve) => {
        const socket = net.connect(port, other, () => resolve('connected'));
        socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
      });
      assert.equal(refused, 'ECONNREFUSED', `the metrics port answered on ${other}`);
    }
    const missing = await fetch(`http://127.0.0.1:${port}/other`);
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('content-type'), 'application/problem+json');
    assert.equal(((await missing.json()) as { code: string }).code, 'not_found');
    const posted = await fetch(handle!.url!, { method: 'POST', body: '{}' });
    assert.equal(posted.status, 405);
    assert.equal(posted.headers.get('allow'), 'GET, HEAD');
    assert.equal(((await posted.json()) as { code: string }).code, 'method_not_allowed');
    // label values come from fixed sets: a code or method the platform does not know is `other`/`OTHER`
    metrics.runEnded('failed', 'boot_timeout', 3);
    metrics.runEnded('failed', 'acme_tenant_specific_code', 3);
    metrics.runEnded('success', undefined, 3);
    metrics.httpRequest('BREW', '/api/runs/{id}', 400, 0.001);
    // a database gauge is read once per window, however often it is scraped
    let reads = 0;
    const unwatch = metrics.watch('webhook_backlog', cachedReader(60_000, async () => ++reads && 7));
    await scrape(handle!.url!);
    const { families, text } = await scrape(handle!.url!);
    unwatch();
    assert.equal(reads, 1);
    assert.equal(figure(families, 'agent_platform_webhook_backlog'), 7);
    const endings = families.find((f) => f.name === 'agent_platform_runs_ended_total')!.metrics.map((m) => `${m.labels?.status}:${m.labels?.error_code}`).sort();
    assert.deepEqual(endings, ['failed:boot_timeout', 'failed:other', 'success:']);
    assert.doesNotMatch(text, /acme_tenant_specific_code|BREW/);
    assert.equal(figure(families, 'agent_platform_http_requests_total', { method: 'OTHER', status: '400' }), 1);
    const loop = families.find((f) => f.name === 'agent_platform_event_loop_delay_seconds');
    assert.equal(loop?.type, 'GAUGE');
    assert.deepEqual(loop.metrics.map((m) => m.labels?.quantile).sort(), ['max', 'p50', 'p90', 'p99']);
  } finally {
    await handle?.stop();
  }
  assert.equal(metrics.enabled, false);
  await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`), 'the listener outlived its stop');
});

test('with an OTLP endpoint the figures are exported over OTLP/HTTP, the last of them when metrics stop', async () => {
  const bodies: string[] = [];
  const collector = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/metrics') bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(collector.address() as net.AddressInfo).port}`;
  try {
    const handle = await startMetrics(loadConfig({ NODE_ENV: 'test', OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }), createLogger('silent'));
    assert.equal(handle?.url, null, 'no listener without METRICS_PORT');
    metrics.runLaunched('inline');
    await handle!.stop();
    const exported = bodies.join('\n');
    assert.match(exported, /agent_platform_runs_launched/);
    assert.match(exported, /"inline"/);
  } finally {
    collector.closeAllConnections();
    await new Promise((resolve) => collector.close(resolve));
  }
});

let platform: PlatformProcess;
let fake: Awaited<ReturnType<typeof startFakeModel>>;
let metricsUrl: string;
let receiver: http.Server;
let received = 0;

before(async () => {
  fake = await startFakeModel();
  receiver = http.createServer((req, res) => {
    req.resume();
    received++;
    res.end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  const receiverHost = `127.0.0.1:${(receiver.address() as net.AddressInfo).port}`;
  platform = await startPlatformProcess({ env: { METRICS_PORT: String(port), SANDBOX_WARM_POOL: '1', EGRESS_ALLOW_INTERNAL_HOSTS: `${new URL(fake.url).host},${receiverHost}` } });
});
after(async () => {
  await platform?.stop();
  await fake?.close();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
});

test("a started platform's /metrics parses as Prometheus text and its run and HTTP figures move, with no tenant id in a label", async () => {
  const anon = client(platform.url);
  const redeem = await anon.post('/api/auth/bootstrap/redeem', {
    token: 'process-bootstrap-token-0123456789', email: 'owner@example.test', password: 'a long enough passphrase', name: 'Owner',
  });
  assert.equal(redeem.status, 201, redeem.text);
  const cookie = redeem.headers.get('set-cookie')!.split(';')[0];
  const keyRes = await client(platform.url, { cookie, org: redeem.body.org_id, space: redeem.body.space_id }).post('/api/api-keys', { name: 'metrics' });
  assert.equal(keyRes.status, 201, keyRes.text);
  const key = keyRes.body.key as string;
  await aDefaultModel(platform.url, key, fake.url);
  const { packageId } = await importFixture(platform.url, key, 'agent-echo');
  const api = client(platform.url, { key });
  const hook = await api.post('/api/webhooks', {
    level: 'space', spaceId: redeem.body.space_id, url: `http://${(receiver.address() as net.AddressInfo).address}:${(receiver.address() as net.AddressInfo).port}/hook`, events: ['run.success'],
  });
  assert.equal(hook.status, 201, hook.text);

  const { families: before, text: textBefore } = await scrape(metricsUrl);
  const launch = await api.post(`/api/agents/${packageId}/run`, { input: { message: 'counted' } });
  assert.equal(launch.status, 201, launch.text);
  const runId = launch.body.id as string;
  const ended = await waitForStatus(api, runId, (s) => !['pending', 'running'].includes(s), 60_000);
  assert.equal(ended.status, 'success', JSON.stringify(ended));
  // the run's own requests (its reads above) are counted once answered: one more read, then the scrape
  assert.equal((await api.get(`/api/runs/${runId}`)).status, 200);
  for (const deadline = Date.now() + 20_000; received < 1; ) {
    assert.ok(Date.now() < deadline, 'the run.success webhook did not arrive');
    await new Promise((r) => setTimeout(r, 100));
  }
  let { text, families } = await scrape(metricsUrl);
  // the attempt is counted once its answer is judged, a moment after the receiver has it
  for (const deadline = Date.now() + 5_000; figure(families, 'agent_platform_webhook_deliveries_total', { outcome: 'succeeded' }) < 1 && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 50));
    ({ text, families } = await scrape(metricsUrl));
  }

  const moved = (name: string, where: Record<string, string> = {}) => figure(families, name, where) - figure(before, name, where);
  assert.equal(moved('agent_platform_runs_launched_total', { kind: 'agent' }), 1);
  assert.equal(moved('agent_platform_runs_ended_total', { status: 'success', error_code: '' }), 1);
  const observed = (name: string, where: Record<string, string> = {}) => observations(text, name, where) - observations(textBefore, name, where);
  assert.equal(observed('agent_platform_run_duration_seconds', { status: 'success' }), 1, 'one run duration observed');
  assert.equal(observed('agent_platform_run_launch_to_running_seconds'), 1, 'one launch-to-running observed');
  assert.equal(moved('agent_platform_sandbox_starts_total', { backend: 'process' }), 1);
  assert.ok(moved('agent_platform_model_tokens_total', { provider: 'openai-compatible', direction: 'input' }) > 0, 'input tokens counted by provider');
  assert.equal(moved('agent_platform_http_requests_total', { method: 'POST', route: '/api/agents/{scope}/{name}/run', status: '201' }), 1);
  assert.ok(moved('agent_platform_http_requests_total', { method: 'GET', route: '/api/runs/{id}', status: '200' }) >= 1);
  assert.ok(observed('agent_platform_http_request_duration_seconds', { method: 'GET', route: '/api/runs/{id}' }) >= 1);
  const inFlight = families.find((f) => f.name === 'agent_platform_runs_in_flight');
  assert.deepEqual(inFlight?.metrics.map((m) => m.labels?.status).sort(), ['pending', 'running']);
  assert.ok(families.some((f) => f.name === 'agent_platform_sandbox_pool_size'), 'the warm pool gauge is exposed');
  assert.equal(figure(families, 'agent_platform_realtime_subscribers'), 0);
  assert.equal(moved('agent_platform_webhook_deliveries_total', { outcome: 'succeeded' }), 1);
  assert.ok(families.some((f) => f.name === 'agent_platform_webhook_backlog'), 'the webhook backlog gauge is exposed');

  // the histograms read as histograms: buckets up to +Inf, then _sum and _count
  const duration = families.find((f) => f.name === 'agent_platform_run_duration_seconds');
  assert.equal(duration?.type, 'HISTOGRAM');
  assert.ok(duration.metrics[0].buckets?.['+Inf'], 'the +Inf bucket is read');

  // the metric table of docs/operators.md names every family exposed, and the dashboard uses only those
  const documented = new Set([...fs.readFileSync(path.join(root, 'docs/operators.md'), 'utf8').matchAll(/^\| `(agent_platform_\w+)` \|/gm)].map((m) => m[1]));
  for (const f of families) assert.ok(documented.has(f.name), `${f.name} is not in the metric table of docs/operators.md`);
  const dashboard = fs.readFileSync(path.join(root, 'docs/grafana/agent-platform.json'), 'utf8');
  const used = new Set([...dashboard.matchAll(/agent_platform_\w+/g)].map((m) => m[0].replace(/_bucket$/, '')));
  assert.ok(used.size >= 10);
  for (const name of used) assert.ok(documented.has(name), `the dashboard uses ${name}, which the metric table of docs/operators.md does not name`);

  const tenantIds = [redeem.body.org_id, redeem.body.space_id, runId, packageId].map(String);
  const labelValues = families.flatMap((f) => f.metrics.flatMap((m) => Object.values(m.labels ?? {})));
  assert.ok(labelValues.length > 20);
  for (const id of tenantIds) {
    assert.ok(!labelValues.includes(id), `a label carries the tenant identifier ${id}`);
    assert.ok(!text.includes(id), `the exposition mentions ${id}`);
  }
});
