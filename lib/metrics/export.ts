// Loaded only when metrics are on (index.ts imports it dynamically): the OpenTelemetry meter
// provider and its instruments, read by a pull reader that serves Prometheus text (exposition.ts)
// on the operator's own listener, and by a periodic OTLP/HTTP export when an endpoint is set.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Attributes, ObservableResult } from '@opentelemetry/api';
import type { IMetricReader } from '@opentelemetry/sdk-metrics';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { errorCatalog } from '../error-catalog.ts';
import { newRequestId } from '../ids.ts';
import { problem, problemBody } from '../problem.ts';
import { prometheusText } from './exposition.ts';
import { gaugeReaders, otlpMetricsUrl, type GaugeName, type MetricsRecorder } from './index.ts';

const PREFIX = 'agent_platform_';
/** seconds: from a fast API answer to a long run */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const RUN_START_BUCKETS = [0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120];
const RUN_DURATION_BUCKETS = [1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600];
/** the event-loop delay figures are of this window, so a stall shows and then passes */
const LOOP_WINDOW_MS = 15_000;

export interface StartedExport {
  recorder: MetricsRecorder;
  url: string | null;
  stop(): Promise<void>;
}

export async function startMetricsExport(config: Config, log: Logger): Promise<StartedExport> {
  // imported here, not at the top: the platform's bundle would hoist a static import of a package
  // to its own top, loading the SDK in every process, metrics on or off
  const { DataPointType, MeterProvider, MetricReader, PeriodicExportingMetricReader } = await import('@opentelemetry/sdk-metrics');
  const { defaultResource, detectResources, envDetector, resourceFromAttributes } = await import('@opentelemetry/resources');
  /** Reads the provider on demand: each scrape is one collection. */
  class PullReader extends MetricReader {
    protected async onForceFlush(): Promise<void> {}
    protected async onShutdown(): Promise<void> {}
  }
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'agent-platform', 'agent_platform.role': config.ROLE }))
    .merge(detectResources({ detectors: [envDetector] }));
  const pull = new PullReader();
  const readers: IMetricReader[] = [pull];
  const otlpUrl = otlpMetricsUrl(config);
  if (otlpUrl) {
    const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-http');
    readers.push(new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter({ url: otlpUrl }), exportIntervalMillis: config.OTEL_METRIC_EXPORT_INTERVAL }));
  }
  const provider = new MeterProvider({ resource, readers });
  const meter = provider.getMeter('agent-platform');

  const runsLaunched = meter.createCounter(`${PREFIX}runs_launched`, { description: 'Runs admitted, by kind (agent, inline, remote).' });
  const runsEnded = meter.createCounter(`${PREFIX}runs_ended`, { description: 'Runs ended, by status and error code (known codes only; other codes are "other").' });
  const runDuration = meter.createHistogram(`${PREFIX}run_duration_seconds`, {
    description: 'From launch to ending, by status.', advice: { explicitBucketBoundaries: RUN_DURATION_BUCKETS },
  });
  const launchToRunning = meter.createHistogram(`${PREFIX}run_launch_to_running_seconds`, {
    description: 'From launch to the sandbox\'s first event (queue and boot).', advice: { explicitBucketBoundaries: RUN_START_BUCKETS },
  });
  const sandboxStarts = meter.createCounter(`${PREFIX}sandbox_starts`, { description: 'Sandboxes started for runs, by backend and source (warm: claimed from the pool; cold: spawned for the run).' });
  const modelTokens = meter.createCounter(`${PREFIX}model_tokens`, { description: 'Model tokens used by runs, by provider and direction (input, output).' });
  const modelCost = meter.createCounter(`${PREFIX}model_cost_usd`, { description: 'Model cost in US dollars reported for runs, by provider.' });
  const webhookDeliveries = meter.createCounter(`${PREFIX}webhook_deliveries`, { description: 'Webhook delivery attempts, by outcome (succeeded, retrying, failed).' });
  const httpRequests = meter.createCounter(`${PREFIX}http_requests`, { description: 'API requests answered, by method, route template and status.' });
  const httpDuration = meter.createHistogram(`${PREFIX}http_request_duration_seconds`, {
    description: 'API request latency, by method and route template.', advice: { explicitBucketBoundaries: REQUEST_BUCKETS },
  });

  const gauge = (name: GaugeName, description: string) => {
    meter.createObservableGauge(`${PREFIX}${name}`, { description }).addCallback(async (result: ObservableResult<Attributes>) => {
      const sums = new Map<string, { value: number; labels: Record<string, string> }>();
      for (const read of gaugeReaders(name)) {
        let figures;
        try {
          figures = await read();
        } catch (err) {
          log.warn('a metrics gauge could not be read', { gauge: name, error: (err as Error).message });
          continue;
        }
        for (const f of typeof figures === 'number' ? [{ value: figures, labels: {} }] : figures) {
          const key = JSON.stringify(Object.entries(f.labels).sort());
          const sum = sums.get(key);
          if (sum) sum.value += f.value;
          else sums.set(key, { value: f.value, labels: f.labels });
        }
      }
      for (const { value, labels } of sums.values()) result.observe(value, labels);
    });
  };
  gauge('runs_in_flight', 'Runs pending or running, platform-wide (from the database; API processes only).');
  gauge('webhook_backlog', 'Webhook deliveries not yet delivered or given up, platform-wide (from the database; API processes only).');
  gauge('realtime_subscribers', 'Realtime streams open on this process.');
  gauge('sandbox_pool_size', 'Started sandboxes waiting in this worker\'s warm pool, by backend.');

  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let window = { p50: 0, p90: 0, p99: 0, max: 0 };
  const takeWindow = () => {
    // the histogram counts nanoseconds; an empty one answers NaN
    const s = (ns: number) => (Number.isFinite(ns) ? ns / 1e9 : 0);
    window = { p50: s(loop.percentile(50)), p90: s(loop.percentile(90)), p99: s(loop.percentile(99)), max: s(loop.max) };
    loop.reset();
  };
  const loopTimer = setInterval(takeWindow, LOOP_WINDOW_MS);
  loopTimer.unref();
  meter.createObservableGauge(`${PREFIX}event_loop_delay_seconds`, { description: `Event-loop delay of this process over the last ${LOOP_WINDOW_MS / 1000} s, by quantile (p50, p90, p99, max).` })
    .addCallback((result) => {
      if (window.max === 0) takeWindow();
      for (const [quantile, value] of Object.entries(window)) result.observe(value, { quantile });
    });

  const recorder: MetricsRecorder = {
    runLaunched: (kind) => runsLaunched.add(1, { kind }),
    runEnded(status, errorCode, durationSeconds) {
      runsEnded.add(1, { status, error_code: errorCode });
      if (durationSeconds !== null) runDuration.record(durationSeconds, { status });
    },
    runStarted: (seconds) => launchToRunning.record(seconds),
    sandboxStarted: (backend, source) => sandboxStarts.add(1, { backend, source }),
    modelUsage(provider, input, output, cost) {
      if (input > 0) modelTokens.add(input, { provider, direction: 'input' });
      if (output > 0) modelTokens.add(output, { provider, direction: 'output' });
      if (cost > 0) modelCost.add(cost, { provider });
    },
    webhookAttempt: (outcome) => webhookDeliveries.add(1, { outcome }),
    httpRequest(method, route, status, seconds) {
      httpRequests.add(1, { method, route, status: String(status) });
      httpDuration.record(seconds, { method, route });
    },
  };

  let server: http.Server | null = null;
  let url: string | null = null;
  if (config.METRICS_PORT) {
    server = http.createServer((req, res) => void serveScrape(req, res));
    const serveScrape = async (req: http.IncomingMessage, res: http.ServerResponse) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics') return answerProblem(res, 'not_found', 'This listener serves GET /metrics only.');
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.setHeader('Allow', 'GET, HEAD');
        return answerProblem(res, 'method_not_allowed', `${req.method} is not allowed on /metrics.`);
      }
      try {
        const { resourceMetrics, errors } = await pull.collect();
        for (const err of errors) log.warn('metrics collection error', { error: String(err) });
        const text = prometheusText(resourceMetrics, DataPointType);
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      } catch (err) {
        log.warn('metrics scrape failed', { error: (err as Error).message });
        answerProblem(res, 'internal_error', 'The metrics could not be collected.');
      }
    };
    const listening = server;
    await new Promise<void>((resolve, reject) => {
      listening.once('error', (err: NodeJS.ErrnoException) =>
        reject(new Error(`The metrics listener cannot listen on ${config.METRICS_HOST}:${config.METRICS_PORT} (${err.code}): set METRICS_PORT to a free port.`)));
      listening.listen(config.METRICS_PORT, config.METRICS_HOST, () => resolve());
    }).catch(async (err) => {
      clearInterval(loopTimer);
      loop.disable();
      await provider.shutdown().catch(() => {});
      throw err;
    });
    const addr = listening.address() as AddressInfo;
    url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}/metrics`;
  }

  function answerProblem(res: http.ServerResponse, code: 'not_found' | 'method_not_allowed' | 'internal_error', detail: string) {
    const requestId = newRequestId();
    const body = JSON.stringify(problemBody(problem(code, { detail }), requestId, config.ERROR_TYPE_BASE));
    res.writeHead(errorCatalog[code].status, { 'content-type': 'application/problem+json', 'content-length': Buffer.byteLength(body), 'request-id': requestId });
    res.end(body);
  }

  return {
    recorder,
    url,
    async stop() {
      clearInterval(loopTimer);
      loop.disable();
      if (server) {
        const closing = server;
        await new Promise<void>((resolve) => {
          closing.close(() => resolve());
          closing.closeAllConnections();
        });
      }
      // the OTLP reader exports what is left before it ends
      await provider.shutdown().catch((err) => log.warn('metrics shutdown failed', { error: String(err) }));
    },
  };
}
