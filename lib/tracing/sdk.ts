// The OpenTelemetry SDK behind lib/tracing: loaded only by startTracing (dynamic import), so an
// instance without an OTLP endpoint never loads it. The collector's address comes from the
// operator's settings (trusted configuration, like DATABASE_URL), never from a tenant, so the
// exporter connects directly rather than through the egress guard.
// Its packages are imported dynamically too: the platform's bundle keeps packages external, and a
// static import there would be hoisted to the bundle's top and load with every start.
import type { Attributes, HrTime, Span } from '@opentelemetry/api';
import type { ReadableSpan, Sampler, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TracingSettings } from './index.ts';
import type { SpanAttributes, SpanRecord, TraceContext } from './records.ts';

export interface BackendSpan {
  readonly context: TraceContext;
  set(attributes: SpanAttributes): void;
  rename(name: string): void;
  fail(reason: string): void;
  end(): void;
}

export interface TracingBackend {
  startSpan(name: string, kind: 'internal' | 'server' | 'client', attributes: SpanAttributes, parent: TraceContext | null, start?: number): BackendSpan;
  exportRecords(records: SpanRecord[]): void;
  shutdown(): Promise<void>;
}

const SCOPE = { name: 'agent-platform' };

async function loadSdk() {
  const [api, resources, base, proto, json, semconv] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  return { api, resources, base, proto, json, semconv };
}
type Sdk = Awaited<ReturnType<typeof loadSdk>>;

/** OTEL_TRACES_SAMPLER and its argument, as the specification names them (default parentbased_always_on). */
export function samplerFrom(sdk: Sdk, name: string | undefined, arg: string | undefined): Sampler {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = sdk.base;
  const ratio = () => {
    const r = Number(arg);
    return new TraceIdRatioBasedSampler(arg !== undefined && Number.isFinite(r) && r >= 0 && r <= 1 ? r : 1);
  };
  switch (name ?? 'parentbased_always_on') {
    case 'always_on': return new AlwaysOnSampler();
    case 'always_off': return new AlwaysOffSampler();
    case 'traceidratio': return ratio();
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: ratio() });
    default: return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function hrTime(epochMs: number): HrTime {
  const seconds = Math.floor(epochMs / 1000);
  return [seconds, Math.round((epochMs - seconds * 1000) * 1e6)];
}

export function exporterUrl(s: Pick<TracingSettings, 'endpoint' | 'tracesEndpoint'>): string {
  if (s.tracesEndpoint) return s.tracesEndpoint;
  return `${s.endpoint!.replace(/\/+$/, '')}/v1/traces`;
}

export async function createTracingBackend(s: TracingSettings): Promise<TracingBackend> {
  const sdk = await loadSdk();
  const { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } = sdk.api;
  const { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } = sdk.semconv;
  const KINDS = { internal: SpanKind.INTERNAL, server: SpanKind.SERVER, client: SpanKind.CLIENT } as const;
  const resource = sdk.resources.resourceFromAttributes({
    ...s.resourceAttributes,
    [ATTR_SERVICE_NAME]: s.serviceName,
    ...(s.serviceVersion ? { [ATTR_SERVICE_VERSION]: s.serviceVersion } : {}),
  });
  const config = { url: exporterUrl(s), headers: s.headers ?? {} };
  const exporter: SpanExporter = s.protocol === 'http/json' ? new sdk.json.OTLPTraceExporter(config) : new sdk.proto.OTLPTraceExporter(config);
  const processor = new sdk.base.BatchSpanProcessor(exporter, { scheduledDelayMillis: s.scheduleDelayMs ?? 5000 });
  const provider = new sdk.base.BasicTracerProvider({ resource, sampler: samplerFrom(sdk, s.sampler, s.samplerArg), spanProcessors: [processor] });
  const tracer = provider.getTracer(SCOPE.name);

  return {
    startSpan(name, kind, attributes, parent, start) {
      const parentContext = parent
        ? trace.setSpanContext(ROOT_CONTEXT, { traceId: parent.traceId, spanId: parent.spanId, traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE, isRemote: true })
        : ROOT_CONTEXT;
      const span: Span = tracer.startSpan(name, { kind: KINDS[kind], attributes, ...(start ? { startTime: hrTime(start) } : {}) }, parentContext);
      const sc = span.spanContext();
      return {
        context: { traceId: sc.traceId, spanId: sc.spanId, sampled: (sc.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED },
        set: (a) => span.setAttributes(a),
        rename: (n) => span.updateName(n),
        fail: (reason) => span.setStatus({ code: SpanStatusCode.ERROR, message: reason }),
        end: () => span.end(),
      };
    },
    exportRecords(records) {
      for (const r of records) processor.onEnd(readable(r));
    },
    async shutdown() {
      await provider.shutdown();
    },
  };

  function readable(r: SpanRecord): ReadableSpan {
    const startTime = hrTime(r.start);
    const endTime = hrTime(r.end);
    const ms = r.end - r.start;
    return {
      name: r.name,
      kind: KINDS[r.kind ?? 'internal'],
      spanContext: () => ({ traceId: r.traceId, spanId: r.spanId, traceFlags: TraceFlags.SAMPLED }),
      ...(r.parentSpanId ? { parentSpanContext: { traceId: r.traceId, spanId: r.parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: true } } : {}),
      startTime,
      endTime,
      duration: hrTime(ms),
      status: r.error ? { code: SpanStatusCode.ERROR, message: r.error } : { code: SpanStatusCode.UNSET },
      attributes: r.attributes as Attributes,
      links: [],
      events: [],
      ended: true,
      resource,
      instrumentationScope: SCOPE,
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
    };
  }
}
