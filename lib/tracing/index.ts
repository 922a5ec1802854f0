// Tracing's one entrance. With no OTLP endpoint configured nothing of OpenTelemetry is loaded
// (the SDK is imported on start only) and every helper here is a call that returns at once.
// The active span is held in this module's own AsyncLocalStorage, not in a global context
// manager, so nothing is registered on the process and a stop leaves no state behind.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Config } from '../config.ts';
import type { TracingBackend, BackendSpan } from './sdk.ts';
import {
  formatTraceparent, runAttributes, type SpanAttributes, type SpanRecord, type TraceContext,
} from './records.ts';

export { parseTraceparent, formatTraceparent, runAttributes, derivedId, SpanRecorder, acceptedSpanRecords, newSpanId, newTraceId } from './records.ts';
export type { SpanAttributes, SpanRecord, TraceContext, RecordingSpan } from './records.ts';

export interface TracingSettings {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL, /v1/traces is added */
  endpoint?: string;
  /** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the full URL, used as given */
  tracesEndpoint?: string;
  protocol: 'http/protobuf' | 'http/json';
  /** OTEL_EXPORTER_OTLP_HEADERS, already parsed: sent to the collector, never logged */
  headers?: Record<string, string>;
  serviceName: string;
  serviceVersion?: string;
  /** OTEL_RESOURCE_ATTRIBUTES, already parsed */
  resourceAttributes?: Record<string, string>;
  sampler?: string;
  samplerArg?: string;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT */
  captureMessageContent?: boolean;
  /** how long spans wait to be sent in a batch (OTEL_BSP_SCHEDULE_DELAY) */
  scheduleDelayMs?: number;
}

export interface TenantIds {
  orgId?: string | null;
  spaceId?: string | null;
  runId?: string | null;
}

export interface SpanOptions {
  kind?: 'internal' | 'server' | 'client';
  /** the parent, from another process; null starts a new trace; absent: the active span */
  parent?: TraceContext | null;
  /** tenant ids: set on this span and inherited by every span started under it */
  tenant?: TenantIds;
  /** epoch ms, when the operation began before the span could be started */
  start?: number;
}

interface Active {
  span: BackendSpan;
  tenant: SpanAttributes;
}

let backend: TracingBackend | null = null;
let captureContent = false;
const store = new AsyncLocalStorage<Active>();

export function tracingConfigured(s: Pick<TracingSettings, 'endpoint' | 'tracesEndpoint'>): boolean {
  return Boolean(s.tracesEndpoint || s.endpoint);
}

/** Starts exporting; answers false (and loads nothing) when no endpoint is configured. */
export async function startTracing(settings: TracingSettings): Promise<boolean> {
  if (!tracingConfigured(settings)) return false;
  if (backend) await stopTracing();
  const { createTracingBackend } = await import('./sdk.ts');
  backend = await createTracingBackend(settings);
  captureContent = settings.captureMessageContent === true;
  return true;
}

/** Sends what is buffered and stops; tracing is off afterwards. A collector that is gone loses those spans, nothing more. */
export async function stopTracing(): Promise<void> {
  const b = backend;
  backend = null;
  captureContent = false;
  await b?.shutdown().catch(() => {});
}

export function tracingActive(): boolean {
  return backend !== null;
}

/** Whether prompts and completions may be recorded (the operator opted in). */
export function captureMessageContent(): boolean {
  return backend !== null && captureContent;
}

/** Runs fn inside a span; with tracing off, just runs fn. */
export function withSpan<T>(name: string, attributes: SpanAttributes | undefined, fn: () => Promise<T>, options: SpanOptions = {}): Promise<T> {
  const b = backend;
  if (!b) return fn();
  const active = options.parent === undefined ? store.getStore() : undefined;
  const parent = options.parent !== undefined ? options.parent : active?.span.context ?? null;
  const tenant = options.tenant ? { ...active?.tenant, ...runAttributes(options.tenant) } : active?.tenant ?? {};
  const span = b.startSpan(name, options.kind ?? 'internal', { ...tenant, ...attributes }, parent, options.start);
  return store.run({ span, tenant }, async () => {
    try {
      return await fn();
    } catch (err) {
      span.fail(failureName(err));
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Adds attributes to the active span. */
export function setSpanAttributes(attributes: SpanAttributes): void {
  if (!backend) return;
  store.getStore()?.span.set(attributes);
}

/** Renames the active span (a server span learns its route after matching). */
export function renameActiveSpan(name: string): void {
  if (!backend) return;
  store.getStore()?.span.rename(name);
}

/** Names the active span's tenant: set on it and inherited by the spans started under it from now. */
export function setSpanTenant(ids: TenantIds): void {
  if (!backend) return;
  const active = store.getStore();
  if (!active) return;
  const attributes = runAttributes(ids);
  Object.assign(active.tenant, attributes);
  active.span.set(attributes);
}

/** Marks the active span failed (a code or class name, never a message that could quote input). */
export function failActiveSpan(reason: string): void {
  if (!backend) return;
  store.getStore()?.span.fail(reason);
}

/** The active span's context, to hand to another process. */
export function activeTraceContext(): TraceContext | undefined {
  if (!backend) return undefined;
  return store.getStore()?.span.context;
}

export function activeTraceparent(): string | undefined {
  const c = activeTraceContext();
  return c ? formatTraceparent(c) : undefined;
}

/** trace_id and span_id of the active span, for log lines. */
export function activeLogIds(): { trace_id: string; span_id: string } | undefined {
  if (!backend) return undefined;
  const c = store.getStore()?.span.context;
  return c ? { trace_id: c.traceId, span_id: c.spanId } : undefined;
}

/** Exports spans another process recorded (or a span known only by its record), with the tenant's ids. */
export function exportSpanRecords(records: SpanRecord[], tenant: TenantIds = {}): void {
  if (!backend || records.length === 0) return;
  const ids = runAttributes(tenant);
  backend.exportRecords(records.map((r) => ({ ...r, attributes: { ...r.attributes, ...ids } })));
}

function failureName(err: unknown): string {
  if (err && typeof err === 'object') {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    if (err instanceof Error) return err.name;
  }
  return 'error';
}

/** The settings as lib/config.ts read them. */
export function tracingSettingsFrom(config: Config, serviceVersion?: string): TracingSettings {
  return {
    endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
    tracesEndpoint: config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    protocol: config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL,
    headers: config.OTEL_EXPORTER_OTLP_HEADERS,
    serviceName: config.OTEL_SERVICE_NAME,
    serviceVersion,
    resourceAttributes: config.OTEL_RESOURCE_ATTRIBUTES,
    sampler: config.OTEL_TRACES_SAMPLER,
    samplerArg: config.OTEL_TRACES_SAMPLER_ARG,
    captureMessageContent: config.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
    scheduleDelayMs: config.OTEL_BSP_SCHEDULE_DELAY,
  };
}
