// The per-run programs' spans as plain records: recorded only under a sampled run context, tool
// calls named with the ids the model's answer gave, content only when the operator opted in, and
// what the platform accepts from a sidecar bounded to the run's trace and to scalar attributes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { acceptedSpanRecords, formatTraceparent, parseTraceparent, SpanRecorder } from '../../lib/tracing/records.ts';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IntegrationAssignment } from '../../sidecar/assignment.ts';
import { integrationTools } from '../../sidecar/integration-tools.ts';
import { SidecarTracing } from '../../sidecar/tracing.ts';
import type { SidecarTool } from '../../sidecar/tool.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const context = (flags = '01') => `00-${TRACE}-${PARENT}-${flags}`;

const echo: SidecarTool = { name: 'lookup', description: 'echo', inputSchema: { type: 'object' }, call: (args) => ({ text: `found ${String(args.q)}` }) };
const answer = { choices: [{ message: { role: 'assistant', tool_calls: [{ id: 'call_a', function: { name: 'lookup', arguments: '{}' } }, { id: 'call_b', function: { name: 'lookup', arguments: '{}' } }] } }] };

test('traceparent: version 00 parsed and written back; invalid or all-zero ids refused', () => {
  assert.deepEqual(parseTraceparent(context()), { traceId: TRACE, spanId: PARENT, sampled: true });
  assert.equal(formatTraceparent(parseTraceparent(context('00'))!), context('00'));
  for (const bad of [undefined, '', `00-${'0'.repeat(32)}-${PARENT}-01`, `00-${TRACE}-${'0'.repeat(16)}-01`, `01-${TRACE}-${PARENT}-01`, context().toUpperCase()]) {
    assert.equal(parseTraceparent(bad), null, String(bad));
  }
});

test('without a sampled context nothing is recorded and the tools are left as they are', async () => {
  for (const trace of [undefined, { traceparent: context('00'), captureMessageContent: false }]) {
    const tracing = new SidecarTracing(trace);
    assert.equal(tracing.recording, false);
    const tools = [echo];
    assert.equal(tracing.traceTools(tools), tools);
    assert.equal(tracing.start('chat x', {}), null);
    assert.deepEqual(tracing.recorder.take(), []);
  }
});

test('tool calls are spans under the run, named with the call ids of the model answer in order, without content by default', async () => {
  const tracing = new SidecarTracing({ traceparent: context(), captureMessageContent: false, agentName: '@acme/a' });
  tracing.noteToolCalls(answer);
  const [tool] = tracing.traceTools([echo]);
  await tool.call({ q: 'first' });
  await tool.call({ q: 'second' });
  await tool.call({ q: 'third' });
  const spans = tracing.recorder.take();
  assert.deepEqual(spans.map((s) => s.attributes['gen_ai.tool.call.id']), ['call_a', 'call_b', undefined]);
  for (const s of spans) {
    assert.equal(s.name, 'execute_tool lookup');
    assert.equal(s.traceId, TRACE);
    assert.equal(s.parentSpanId, PARENT);
    assert.equal(s.attributes['gen_ai.operation.name'], 'execute_tool');
    assert.equal(s.attributes['gen_ai.agent.name'], '@acme/a');
    assert.ok(s.end >= s.start);
    assert.ok(!JSON.stringify(s).includes('first') && !JSON.stringify(s).includes('found'), 'no arguments or results');
  }
  assert.deepEqual(tracing.recorder.take(), [], 'taken once');
});

test('with the operator opted in, tool arguments and results are recorded', async () => {
  const tracing = new SidecarTracing({ traceparent: context(), captureMessageContent: true });
  const [tool] = tracing.traceTools([echo]);
  await tool.call({ q: 'first' });
  const [span] = tracing.recorder.take();
  assert.equal(span.attributes['gen_ai.tool.call.arguments'], '{"q":"first"}');
  assert.equal(span.attributes['gen_ai.tool.call.result'], 'found first');
});

test('a recorder keeps a bounded number of finished spans', () => {
  const recorder = new SpanRecorder(context(), {}, 3);
  for (let i = 0; i < 5; i++) recorder.start(`s${i}`)!.end();
  assert.equal(recorder.take().length, 3);
});

test("the platform accepts a sidecar's spans only in the run's trace, well formed, with scalar attributes of bounded size", () => {
  const good = { name: 'chat m', traceId: TRACE, spanId: 'a'.repeat(16), parentSpanId: PARENT, kind: 'client', start: 1, end: 2, attributes: { n: 1, ok: true, s: 'x'.repeat(10_000), nested: { a: 1 }, list: [1] } };
  const accepted = acceptedSpanRecords([
    good,
    { ...good, traceId: 'f'.repeat(32) },
    { ...good, spanId: 'nothex' },
    { ...good, end: 0 },
    { ...good, parentSpanId: 'short' },
    'not a span',
  ], TRACE);
  assert.equal(accepted.length, 1);
  assert.deepEqual(Object.keys(accepted[0].attributes).sort(), ['n', 'ok', 's']);
  assert.equal((accepted[0].attributes.s as string).length, 4096);
  assert.equal(acceptedSpanRecords(Array.from({ length: 300 }, () => good), TRACE).length, 256);
  assert.deepEqual(acceptedSpanRecords({ not: 'an array' }, TRACE), []);
});

test("an integration's upstream request is a client span naming method and host only, and carries its traceparent", async (t) => {
  let seen: string | undefined;
  const upstream = createServer((req, res) => {
    seen = req.headers.traceparent as string | undefined;
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => upstream.close(() => r())));
  const host = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const integration = {
    packageId: '@acme/crm', toolPrefix: 'acme_crm', tools: ['api_call'], source: { kind: 'none' }, authKey: 'default',
    connectionId: 'c0ffee00-0000-4000-8000-000000000001', authorizedUris: [`http://${host}/*`],
    delivery: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.api_key}' },
    credentials: { api_key: 'sk-upstream-secret-0123456789' },
  } as unknown as IntegrationAssignment;
  const tracing = new SidecarTracing({ traceparent: context(), captureMessageContent: false });
  const served = await integrationTools([integration], {
    egress: { allowInternalHosts: [host] }, upstreamSpan: (method, target) => tracing.upstreamSpan(method, target),
  });
  t.after(() => served.close());
  const answer = await served.tools[0].call({ method: 'GET', url: `http://${host}/contacts?secret=q1` });
  assert.ok(!answer.isError, answer.text);
  const [span] = tracing.recorder.take();
  assert.equal(span.name, `GET ${host}`);
  assert.equal(span.kind, 'client');
  assert.equal(span.attributes['http.response.status_code'], 200);
  assert.equal(seen, `00-${TRACE}-${span.spanId}-01`);
  const text = JSON.stringify(span);
  assert.ok(!text.includes('contacts') && !text.includes('q1') && !text.includes('sk-upstream'), text);
});
