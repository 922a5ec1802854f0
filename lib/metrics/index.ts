// The platform's metrics, one front door: the figures are counted through `metrics` wherever they
// happen, and cost one null check while metrics are off (no METRICS_PORT, no OTLP endpoint): the
// OpenTelemetry SDK and the listener are loaded only by startMetrics, by dynamic import.
// Labels never carry tenant identifiers: every label value comes from a small fixed set.
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { errorCatalog } from '../error-catalog.ts';

/** What the instruments behind the front door take; implemented in recorder.ts. */
export interface MetricsRecorder {
  runLaunched(kind: string): void;
  runEnded(status: string, errorCode: string, durationSeconds: number | null): void;
  runStarted(secondsSinceLaunch: number): void;
  sandboxStarted(backend: string, source: 'warm' | 'cold'): void;
  modelUsage(provider: string, inputTokens: number, outputTokens: number, costUsd: number): void;
  webhookAttempt(outcome: 'succeeded' | 'retrying' | 'failed'): void;
  httpRequest(method: string, route: string, status: number, seconds: number): void;
}

/** A figure read when metrics are collected (a scrape or an OTLP export). */
export type GaugeReader = () => number | Array<{ value: number; labels: Record<string, string> }> | Promise<number | Array<{ value: number; labels: Record<string, string> }>>;

export type GaugeName = 'runs_in_flight' | 'webhook_backlog' | 'realtime_subscribers' | 'sandbox_pool_size';

const gauges = new Map<GaugeName, Set<GaugeReader>>();
let recorder: MetricsRecorder | null = null;

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const RUN_STATUSES = new Set(['success', 'failed', 'timeout', 'cancelled']);
const RUN_KINDS = new Set(['agent', 'inline', 'remote']);
const PROVIDERS = new Set(['openai-compatible', 'openai', 'anthropic']);
/** codes a run ends with that the platform itself gives (beside the API's catalog codes) */
const RUN_ENDING_CODES = new Set([
  'run_timeout', 'run_cancelled', 'run_cancelled_by_operator', 'boot_timeout', 'boot_failed', 'sandbox_lost', 'heartbeat_lost',
  'run_abandoned', 'workflow_lost', 'no_output', 'output_invalid', 'agent_error', 'platform_unreachable', 'no_connection', 'invalid_answer', 'empty_prompt',
]);

/** An agent may fail with any code it likes: only known codes become label values, the rest `other`. */
export function boundedErrorCode(code: string | undefined): string {
  if (!code) return '';
  return RUN_ENDING_CODES.has(code) || Object.hasOwn(errorCatalog, code) ? code : 'other';
}

const bounded = (set: Set<string>, value: string | undefined | null) => (value && set.has(value) ? value : 'other');

export const metrics = {
  /** whether figures are being counted (for work done only to count one, like a query) */
  get enabled(): boolean {
    return recorder !== null;
  },
  runLaunched(kind: string): void {
    recorder?.runLaunched(bounded(RUN_KINDS, kind));
  },
  /** from the one compare-and-set that ends a run, so each run is counted once */
  runEnded(status: string, errorCode: string | undefined, durationSeconds: number | null): void {
    recorder?.runEnded(bounded(RUN_STATUSES, status), status === 'success' ? '' : boundedErrorCode(errorCode), durationSeconds);
  },
  runStarted(secondsSinceLaunch: number): void {
    recorder?.runStarted(Math.max(0, secondsSinceLaunch));
  },
  sandboxStarted(backend: 'process' | 'docker', source: 'warm' | 'cold'): void {
    recorder?.sandboxStarted(backend, source);
  },
  modelUsage(provider: string | null | undefined, inputTokens: number, outputTokens: number, costUsd: number): void {
    recorder?.modelUsage(bounded(PROVIDERS, provider), inputTokens || 0, outputTokens || 0, Number.isFinite(costUsd) ? costUsd : 0);
  },
  webhookAttempt(outcome: 'succeeded' | 'retrying' | 'failed'): void {
    recorder?.webhookAttempt(outcome);
  },
  /** `route` is the route's template (/api/runs/{id}), never the path a client sent */
  httpRequest(method: string, route: string, status: number, seconds: number): void {
    recorder?.httpRequest(HTTP_METHODS.has(method) ? method : 'OTHER', route, status, seconds);
  },
  /** Adds a reader of a gauge (several readers of one gauge are summed, label by label); answers its removal. */
  watch(name: GaugeName, read: GaugeReader): () => void {
    let set = gauges.get(name);
    if (!set) gauges.set(name, (set = new Set()));
    set.add(read);
    return () => void set.delete(read);
  },
};

/** A reader answering its last figures for `ms` (database gauges: one query per window, whatever the scrapers). */
export function cachedReader(ms: number, read: GaugeReader): GaugeReader {
  let last: { at: number; figures: Promise<Awaited<ReturnType<GaugeReader>>> } | null = null;
  return () => {
    if (!last || performance.now() - last.at > ms) {
      const figures = Promise.resolve(read());
      const entry = { at: performance.now(), figures };
      // a failed read is not kept: the next collection asks again
      figures.catch(() => {
        if (last === entry) last = null;
      });
      last = entry;
    }
    return last.figures;
  };
}

/** The readers of a gauge, for the recorder. */
export function gaugeReaders(name: GaugeName): ReadonlySet<GaugeReader> {
  return gauges.get(name) ?? new Set();
}

export interface MetricsHandle {
  /** where /metrics is served (null when only OTLP export is on) */
  url: string | null;
  stop(): Promise<void>;
}

/** Whether this configuration asks for metrics at all. */
export function metricsWanted(config: Config): boolean {
  return Boolean(config.METRICS_PORT) || Boolean(otlpMetricsUrl(config));
}

/** The OTLP/HTTP metrics endpoint, from the metrics-specific setting or the general one. */
export function otlpMetricsUrl(config: Config): string | null {
  if (!config.OTEL_METRICS_EXPORTER.includes('otlp')) return null;
  if (config.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) return config.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT;
  if (config.OTEL_EXPORTER_OTLP_ENDPOINT) return `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/metrics`;
  return null;
}

/**
 * Starts counting, the /metrics listener (METRICS_PORT on METRICS_HOST) and the OTLP export when
 * an endpoint is set. Answers null, having loaded nothing, when the configuration asks for none.
 * One process counts once: a second start while the first runs is refused.
 */
export async function startMetrics(config: Config, log: Logger): Promise<MetricsHandle | null> {
  if (!metricsWanted(config)) return null;
  if (recorder) throw new Error('metrics are already started in this process');
  const { startMetricsExport } = await import('./export.ts');
  const started = await startMetricsExport(config, log);
  recorder = started.recorder;
  return {
    url: started.url,
    async stop() {
      recorder = null;
      await started.stop();
    },
  };
}
