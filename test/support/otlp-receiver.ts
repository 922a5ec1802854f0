// A loopback OTLP/HTTP trace receiver for tests: takes POST /v1/traces in http/json (decoded as
// JSON) and http/protobuf (decoded with protobufjs over the OTLP trace messages written out here
// from the specification's field numbers, independently of the exporter's own serializer).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';

export type AttributeValue = string | number | boolean | null;

export interface ReceivedSpan {
  protocol: 'http/json' | 'http/protobuf';
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  statusCode: number;
  attributes: Record<string, AttributeValue>;
  resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** every request's content type, in order */
  contentTypes: string[];
  /** raw request bodies, for checks on the bytes themselves */
  bodies: Buffer[];
  close(): Promise<void>;
}

// opentelemetry/proto/collector/trace/v1 and its dependencies, the fields a test reads
const OTLP_TRACE = protobuf.Root.fromJSON({
  nested: {
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
    ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
    Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    ScopeSpans: { fields: { scope: { type: 'InstrumentationScope', id: 1 }, spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    InstrumentationScope: { fields: { name: { type: 'string', id: 1 }, version: { type: 'string', id: 2 } } },
    Span: {
      fields: {
        traceId: { type: 'bytes', id: 1 },
        spanId: { type: 'bytes', id: 2 },
        parentSpanId: { type: 'bytes', id: 4 },
        name: { type: 'string', id: 5 },
        kind: { type: 'int32', id: 6 },
        startTimeUnixNano: { type: 'fixed64', id: 7 },
        endTimeUnixNano: { type: 'fixed64', id: 8 },
        attributes: { rule: 'repeated', type: 'KeyValue', id: 9 },
        status: { type: 'Status', id: 15 },
      },
    },
    Status: { fields: { message: { type: 'string', id: 2 }, code: { type: 'int32', id: 3 } } },
    KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
    AnyValue: {
      oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'] } },
      fields: {
        stringValue: { type: 'string', id: 1 },
        boolValue: { type: 'bool', id: 2 },
        intValue: { type: 'int64', id: 3 },
        doubleValue: { type: 'double', id: 4 },
        arrayValue: { type: 'ArrayValue', id: 5 },
        kvlistValue: { type: 'KeyValueList', id: 6 },
        bytesValue: { type: 'bytes', id: 7 },
      },
    },
    ArrayValue: { fields: { values: { rule: 'repeated', type: 'AnyValue', id: 1 } } },
    KeyValueList: { fields: { values: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
  },
}).lookupType('ExportTraceServiceRequest');

/** An id as OTLP/JSON (hex) or protobufjs (bytes, here base64 after toObject) gives it, as hex. */
function hexId(v: unknown): string | undefined {
  if (typeof v !== 'string' || v === '') return undefined;
  if (/^[0-9a-f]+$/i.test(v) && (v.length === 16 || v.length === 32)) return v.toLowerCase();
  return Buffer.from(v, 'base64').toString('hex');
}

function valueOf(any: any): AttributeValue {
  if (!any || typeof any !== 'object') return null;
  if ('stringValue' in any) return String(any.stringValue);
  if ('boolValue' in any) return Boolean(any.boolValue);
  if ('intValue' in any) return Number(any.intValue);
  if ('doubleValue' in any) return Number(any.doubleValue);
  if ('arrayValue' in any) return JSON.stringify((any.arrayValue?.values ?? []).map(valueOf));
  return null;
}

function attributesOf(list: any[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of list ?? []) out[kv.key] = valueOf(kv.value);
  return out;
}

function spansOf(request: any, protocol: ReceivedSpan['protocol']): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          protocol,
          traceId: hexId(s.traceId)!,
          spanId: hexId(s.spanId)!,
          parentSpanId: hexId(s.parentSpanId),
          name: s.name,
          kind: Number(s.kind ?? 0),
          startNs: BigInt(s.startTimeUnixNano ?? 0),
          endNs: BigInt(s.endTimeUnixNano ?? 0),
          statusCode: Number(s.status?.code ?? 0),
          attributes: attributesOf(s.attributes),
          resource,
        });
      }
    }
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const bodies: Buffer[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      contentTypes.push(type);
      bodies.push(body);
      try {
        if (type.startsWith('application/json')) {
          spans.push(...spansOf(JSON.parse(body.toString('utf8')), 'http/json'));
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } else {
          const decoded = OTLP_TRACE.toObject(OTLP_TRACE.decode(body), { longs: String, bytes: String, defaults: false });
          spans.push(...spansOf(decoded, 'http/protobuf'));
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        }
      } catch (err) {
        res.writeHead(400).end(String(err));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    contentTypes,
    bodies,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}
