// One trace per run, exported over OTLP to a loopback receiver this test runs, in both protocols
// (http/protobuf, then http/json after a restart): a caller's traceparent is continued by the
// launch, the workflow and its steps, the sandbox's start, and the sidecar's model call (GenAI
// attributes with the token counts the scripted model reported) and tool call, parented across
// the platform and the sidecar. No span carries a credential or, by default, message content.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { writeZip } from '../../lib/zip/write-zip.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { client } from '../support/http.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importPackage } from '../support/runs.ts';

const PROMPT_MARK = 'Say the secret word fennel-7d1c and report it';
const TOKENS = { prompt_tokens: 37, completion_tokens: 11 };

let receiver: OtlpReceiver;
let fake: FakeModel;
let platform: PlatformProcess;
let key: string;
let password: string;

const zip = (files: Record<string, string>) => writeZip(Object.entries(files).map(([name, text]) => [name, Buffer.from(text)]));

const AGENT = zip({
  'manifest.json': JSON.stringify({
    name: '@acme/traced', version: '1.0.0', type: 'agent', schema_version: '0.3', timeout: 120,
    output: { schema: { type: 'object', properties: { result: { type: 'string' } }, required: ['result'], additionalProperties: false } },
    runtime_tools: ['output'],
  }),
  'prompt.md': `${PROMPT_MARK}.\n\n\`\`\`fake-model-script\n${JSON.stringify([{ tool: 'output', arguments: { result: 'traced' } }])}\n\`\`\`\n`,
});

before(async () => {
  receiver = await startOtlpReceiver();
  fake = await startFakeModel({ usage: TOKENS });
  platform = await startPlatformProcess({
    env: {
      SANDBOX_WARM_POOL: '0',
      EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_SERVICE_NAME: 'platform-under-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=tracing-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
  const anon = client(platform.url);
  password = `a long enough passphrase ${randomBytes(4).toString('hex')}`;
  const redeem = await anon.post('/api/auth/bootstrap/redeem', { token: 'process-bootstrap-token-0123456789', email: 'owner@example.test', password, name: 'Owner' });
  assert.equal(redeem.status, 201, redeem.text);
  const cookie = redeem.headers.get('set-cookie')!.split(';')[0];
  const made = await client(platform.url, { cookie, org: redeem.body.org_id, space: redeem.body.space_id }).post('/api/api-keys', { name: 'tracing' });
  assert.equal(made.status, 201, made.text);
  key = made.body.key as string;
  await aDefaultModel(platform.url, key, fake.url, 'fake-script');
  await importPackage(platform.url, key, AGENT, 'traced.afps');
});

after(async () => {
  await platform?.stop();
  await fake?.close();
  await receiver?.close();
});

/** Launches the agent under a caller's trace and answers the trace once its workflow span arrived. */
async function tracedRun(): Promise<{ runId: string; traceId: string; callerSpanId: string; spans: ReceivedSpan[]; modelCallsFrom: number }> {
  const modelCallsFrom = fake.requests.length;
  const traceId = randomBytes(16).toString('hex');
  const callerSpanId = randomBytes(8).toString('hex');
  const launched = await fetch(`${platform.url}/api/agents/@acme/traced/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: `00-${traceId}-${callerSpanId}-01` },
    body: JSON.stringify({ input: {} }),
  });
  const run = (await launched.json()) as { id: string };
  assert.equal(launched.status, 201, JSON.stringify(run));
  const done = await client(platform.url, { key }).get(`/api/runs/${run.id}?wait=60`);
  assert.equal(done.body.status, 'success', `run ended ${done.body.status}: ${JSON.stringify(done.body.error)}\n${platform.output().slice(-3000)}`);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const spans = receiver.spans.filter((s) => s.traceId === traceId);
    if (spans.some((s) => s.name === 'run workflow') && spans.some((s) => s.name.startsWith('chat '))) return { runId: run.id, traceId, callerSpanId, spans, modelCallsFrom };
    if (Date.now() > deadline) assert.fail(`the run's trace did not arrive; spans: ${spans.map((s) => s.name).join(', ')}\n${platform.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function one(spans: ReceivedSpan[], name: string | RegExp): ReceivedSpan {
  const found = spans.filter((s) => (typeof name === 'string' ? s.name === name : name.test(s.name)));
  assert.ok(found.length >= 1, `a span ${name} among ${spans.map((s) => s.name).join(', ')}`);
  return found[0];
}

function assertOneTrace(t: Awaited<ReturnType<typeof tracedRun>>, protocol: ReceivedSpan['protocol']): void {
  const { spans, runId, callerSpanId } = t;
  assert.ok(spans.every((s) => s.protocol === protocol), `every span came over ${protocol}`);
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const parentOf = (s: ReceivedSpan) => byId.get(s.parentSpanId ?? '');

  // the launch continues the caller's context: its server span, then the launch itself
  const server = spans.find((s) => s.parentSpanId === callerSpanId && s.kind === 2)!;
  assert.ok(server, `a server span under the caller's: ${spans.map((s) => `${s.name}<-${s.parentSpanId}`).join(', ')}`);
  assert.equal(server.name, 'POST /api/agents/{scope}/{name}/run');
  assert.equal(server.attributes['http.route'], '/api/agents/{scope}/{name}/run');
  assert.equal(server.attributes['http.response.status_code'], 201);
  const launch = one(spans, 'run launch');
  assert.equal(parentOf(launch), server);

  // the workflow (another process's work: the engine calls the worker) continues the launch
  const workflow = one(spans, 'run workflow');
  assert.equal(parentOf(workflow), launch);
  assert.equal(workflow.attributes['agent_platform.run.status'], 'success');
  const boot = one(spans, 'run boot');
  assert.equal(parentOf(boot), workflow);
  assert.equal(parentOf(one(spans, 'sandbox start')), boot);
  assert.equal(parentOf(one(spans, 'run teardown')), workflow);

  // the sidecar's spans, recorded in the sandbox and exported by the platform, under the workflow
  const chat = one(spans, 'chat fake-script');
  assert.equal(parentOf(chat), workflow);
  assert.equal(chat.kind, 3, 'a client span');
  assert.equal(chat.attributes['gen_ai.operation.name'], 'chat');
  assert.equal(chat.attributes['gen_ai.provider.name'], 'openai-compatible');
  assert.equal(chat.attributes['gen_ai.request.model'], 'fake-script');
  assert.equal(chat.attributes['gen_ai.response.model'], 'fake-script');
  assert.equal(chat.attributes['gen_ai.usage.input_tokens'], TOKENS.prompt_tokens);
  assert.equal(chat.attributes['gen_ai.usage.output_tokens'], TOKENS.completion_tokens);
  assert.equal(chat.attributes['gen_ai.agent.name'], '@acme/traced');
  const tool = one(spans, 'execute_tool output');
  assert.equal(parentOf(tool), workflow);
  assert.equal(tool.attributes['gen_ai.operation.name'], 'execute_tool');
  assert.equal(tool.attributes['gen_ai.tool.name'], 'output');
  assert.ok(tool.startNs >= chat.endNs, 'the tool ran after the model asked for it');
  // the call id is the one the model gave (the agent sends it back with the tool's answer)
  const followUp = fake.requests.slice(t.modelCallsFrom).filter((r) => r.model === 'fake-script').find((r) => r.body.messages.some((m: any) => m.tool_calls?.length));
  const callId = followUp?.body.messages.find((m: any) => m.tool_calls?.length).tool_calls[0].id;
  assert.ok(typeof callId === 'string' && callId.length > 0);
  assert.equal(tool.attributes['gen_ai.tool.call.id'], callId);
  // the sidecar's upstream call carried the model span's context
  assert.ok(fake.requests.some((r) => r.traceparent === `00-${t.traceId}-${chat.spanId}-01`), 'the model provider got the chat span as its parent');

  // event ingestion (the sidecar posts with the run's context) and finalization are in the run's trace
  const ingestions = spans.filter((s) => s.name === 'POST /internal/runs/{id}/events');
  // the sidecar batches a run's events: one post may carry several (its span counts them)
  assert.ok(ingestions.length >= 1, `event ingestions: ${spans.map((s) => s.name).join(', ')}`);
  const ingested = ingestions.reduce((n, s) => n + Number(s.attributes['agent_platform.event.count'] ?? 1), 0);
  assert.ok(ingested >= 2, `events ingested: ${ingested} (started, completed at least)`);
  assert.ok(ingestions.every((s) => parentOf(s) === workflow));
  assert.ok(ingestions.some((s) => s.attributes['agent_platform.event.type'] === 'completed'));
  assert.ok(spans.some((s) => s.name === 'run finalization' && s.attributes['agent_platform.run.finalized'] === true));

  // every span names its tenant and run; the resource is the operator's
  for (const s of spans) {
    assert.equal(s.attributes['agent_platform.run_id'], runId, `${s.name} names the run`);
    assert.match(String(s.attributes['agent_platform.org_id']), /./, `${s.name} names the organization`);
    assert.match(String(s.attributes['agent_platform.space_id']), /./, `${s.name} names the space`);
    assert.equal(s.resource['service.name'], 'platform-under-test');
    assert.equal(s.resource['deployment.environment.name'], 'tracing-test');
  }
}

/** No credential and, by default, no message content anywhere in what was exported. */
function assertNothingSecret(): void {
  const wire = receiver.bodies.map((b) => b.toString('latin1')).join('\n');
  for (const secret of [key, password, 'sk-fake-provider-key', 'process-bootstrap-token-0123456789', 'Bearer ', 'whsec_', PROMPT_MARK]) {
    assert.ok(!wire.includes(secret), `the exported bytes do not carry ${secret.slice(0, 12)}...`);
  }
  for (const s of receiver.spans) {
    for (const [k, v] of Object.entries(s.attributes)) {
      assert.doesNotMatch(k, /authorization|cookie|secret|password|api_?key|token$|messages$|arguments$|call\.result$/i, `${s.name}: ${k}`);
      assert.ok(!(typeof v === 'string' && /^(sk-|whsec_|Bearer )/.test(v)), `${s.name}: ${k}`);
    }
  }
}

test('a run is one trace over http/protobuf, parented across the platform and its sidecar', async () => {
  const t = await tracedRun();
  assertOneTrace(t, 'http/protobuf');
  assert.ok(receiver.contentTypes.every((c) => c.startsWith('application/x-protobuf')), receiver.contentTypes.join(', '));
  assertNothingSecret();
});

test('after a restart with OTEL_EXPORTER_OTLP_PROTOCOL=http/json, a run is one trace over JSON', async () => {
  const before = receiver.contentTypes.length;
  platform.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
  await platform.kill('SIGTERM');
  await platform.restart();
  const t = await tracedRun();
  assertOneTrace(t, 'http/json');
  assert.ok(receiver.contentTypes.slice(before).some((c) => c.startsWith('application/json')));
  assertNothingSecret();
});
