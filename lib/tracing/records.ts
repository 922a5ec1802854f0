// Spans as plain data: what the per-run programs record (they never load the OpenTelemetry SDK)
// and send with their signed run events, and what the platform exports on their behalf. Also the
// W3C traceparent, parsed and written. Nothing here imports OpenTelemetry.
import { createHash, randomBytes } from 'node:crypto';

export type SpanAttributeValue = string | number | boolean;
export type SpanAttributes = Record<string, SpanAttributeValue>;

export interface SpanRecord {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  kind?: 'internal' | 'server' | 'client';
  /** epoch milliseconds (fractions kept) */
  start: number;
  end: number;
  attributes: SpanAttributes;
  /** set when the operation failed; the message names no secret */
  error?: string;
}

/** The context of a span as carried between processes. */
export interface TraceContext {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** A valid version-00 traceparent, else null. */
export function parseTraceparent(value: unknown): TraceContext | null {
  if (typeof value !== 'string' || value.length !== 55) return null;
  const m = TRACEPARENT.exec(value);
  if (!m || m[1] === ZERO_TRACE || m[2] === ZERO_SPAN) return null;
  return { traceId: m[1], spanId: m[2], sampled: (parseInt(m[3], 16) & 1) === 1 };
}

export function formatTraceparent(c: TraceContext): string {
  return `00-${c.traceId}-${c.spanId}-${c.sampled ? '01' : '00'}`;
}

export const newSpanId = (): string => randomBytes(8).toString('hex');
export const newTraceId = (): string => randomBytes(16).toString('hex');

/** An id derived from names: the same run always gets the same workflow span, across replays and restarts. */
export function derivedId(bytes: 8 | 16, ...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, bytes * 2);
}

/** The tenant attributes every span of a run carries. */
export function runAttributes(ids: { orgId?: string | null; spaceId?: string | null; runId?: string | null }): SpanAttributes {
  const out: SpanAttributes = {};
  if (ids.orgId) out['agent_platform.org_id'] = ids.orgId;
  if (ids.spaceId) out['agent_platform.space_id'] = ids.spaceId;
  if (ids.runId) out['agent_platform.run_id'] = ids.runId;
  return out;
}

const HEX16 = /^[0-9a-f]{16}$/;
const HEX32 = /^[0-9a-f]{32}$/;
const MAX_NAME = 200;
const MAX_ATTRIBUTES = 64;
const MAX_VALUE = 4096;

/**
 * Spans a sidecar sent, checked and bounded: only the run's trace, well-formed ids and times,
 * scalar attributes of bounded size; anything else is dropped, never an error for the event.
 */
export function acceptedSpanRecords(raw: unknown, traceId: string, max = 256): SpanRecord[] {
  if (!Array.isArray(raw)) return [];
  const out: SpanRecord[] = [];
  for (const r of raw.slice(0, max)) {
    if (!r || typeof r !== 'object') continue;
    const s = r as Record<string, unknown>;
    if (s.traceId !== traceId || !HEX32.test(traceId) || typeof s.spanId !== 'string' || !HEX16.test(s.spanId)) continue;
    if (s.parentSpanId !== undefined && (typeof s.parentSpanId !== 'string' || !HEX16.test(s.parentSpanId))) continue;
    if (typeof s.name !== 'string' || s.name === '' || typeof s.start !== 'number' || typeof s.end !== 'number' || !(s.end >= s.start)) continue;
    const attributes: SpanAttributes = {};
    if (s.attributes && typeof s.attributes === 'object') {
      for (const [k, v] of Object.entries(s.attributes as object).slice(0, MAX_ATTRIBUTES)) {
        if (typeof v === 'string') attributes[k.slice(0, MAX_NAME)] = v.slice(0, MAX_VALUE);
        else if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean') attributes[k.slice(0, MAX_NAME)] = v;
      }
    }
    out.push({
      name: s.name.slice(0, MAX_NAME),
      traceId,
      spanId: s.spanId,
      ...(s.parentSpanId ? { parentSpanId: s.parentSpanId as string } : {}),
      kind: s.kind === 'client' || s.kind === 'server' ? s.kind : 'internal',
      start: s.start,
      end: s.end,
      attributes,
      ...(typeof s.error === 'string' ? { error: s.error.slice(0, MAX_VALUE) } : {}),
    });
  }
  return out;
}

/** A span being recorded by a per-run program. */
export interface RecordingSpan {
  readonly spanId: string;
  /** the traceparent naming this span, for the requests made under it */
  readonly traceparent: string;
  set(attributes: SpanAttributes): void;
  fail(message: string): void;
  end(): void;
}

/**
 * The per-run programs' recorder: spans under the run's context, kept as records until the next
 * event carries them. Without a sampled context it records nothing and costs nothing.
 */
export class SpanRecorder {
  private finished: SpanRecord[] = [];
  private readonly parent: TraceContext | null;

  constructor(traceparent: string | undefined, private readonly common: SpanAttributes = {}, private readonly maxKept = 1000) {
    const parsed = parseTraceparent(traceparent);
    this.parent = parsed?.sampled ? parsed : null;
  }

  get recording(): boolean {
    return this.parent !== null;
  }

  /** The run's own context (for requests made outside any span of this program). */
  get traceparent(): string | undefined {
    return this.parent ? formatTraceparent(this.parent) : undefined;
  }

  start(name: string, attributes: SpanAttributes = {}, kind: SpanRecord['kind'] = 'internal', parentSpanId?: string): RecordingSpan | null {
    const parent = this.parent;
    if (!parent) return null;
    const record: SpanRecord = {
      name, traceId: parent.traceId, spanId: newSpanId(), parentSpanId: parentSpanId ?? parent.spanId, kind,
      start: performance.timeOrigin + performance.now(), end: 0, attributes: { ...this.common, ...attributes },
    };
    let ended = false;
    return {
      spanId: record.spanId,
      traceparent: formatTraceparent({ traceId: parent.traceId, spanId: record.spanId, sampled: true }),
      set: (a) => Object.assign(record.attributes, a),
      fail: (message) => (record.error = message),
      end: () => {
        if (ended) return;
        ended = true;
        record.end = performance.timeOrigin + performance.now();
        if (this.finished.length < this.maxKept) this.finished.push(record);
      },
    };
  }

  /** The spans finished since the last call. */
  take(): SpanRecord[] {
    if (this.finished.length === 0) return [];
    const out = this.finished;
    this.finished = [];
    return out;
  }
}
