// The LLM proxy serves what OpenAI-compatible clients call beside chat completions, driven here by
// the official OpenAI SDK pointed at /api/llm-proxy: the Responses API (JSON and its event stream)
// on the run's model and embeddings on a model of the organization, with the organization's key,
// the usage in the run's cost ledger and the budgets enforced as for chat completions; a provider
// that does not offer an endpoint is 400 model_not_offered.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { aKey, anOrg, aSession, type BuiltOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { aCredential, aModel, aModelWorld, PROVIDER_KEY, type ModelWorld } from './models-harness.ts';

let w: ModelWorld;
let n = 0;
const models = { chat: '', reasoner: '', embed: '', anthropic: '' };

async function aRun(org: BuiltOrg, opts: { modelId?: string | null; settings?: Record<string, unknown> } = {}): Promise<string> {
  const id = `run_openai${++n}_${Math.random().toString(36).slice(2, 8)}`;
  await w.app.deps.database.pool.query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at, model_id, model_settings)
     VALUES ($1, $2, $3, '@acme/agent', '1.0.0', 'running', 'member', $4, 60, $5, now() + interval '1 hour', $6, $7)`,
    [id, org.orgId, org.spaceId, org.ownerId, w.app.deps.secrets.seal(newRunEventSecret()), opts.modelId ?? null, opts.settings ?? null],
  );
  return id;
}

/** The official client as a remote runner uses it: the proxy as its base URL, a key holding llm-proxy:call, the run named. */
async function openaiFor(runId: string, org: BuiltOrg = w.org): Promise<OpenAI> {
  const { key } = await aKey(w.app.deps.database.pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, scopes: ['llm-proxy:call'] });
  return new OpenAI({ apiKey: key, baseURL: `${w.app.url}/api/llm-proxy`, defaultHeaders: { 'x-run-id': runId }, maxRetries: 0 });
}

async function ledger(runId: string) {
  const pool = w.app.deps.database.pool;
  const run = (await pool.query('SELECT status, error, prompt_tokens, completion_tokens FROM runs WHERE id = $1', [runId])).rows[0];
  const usage = (await pool.query('SELECT model, prompt_tokens, completion_tokens FROM run_usage WHERE run_id = $1 ORDER BY sequence DESC', [runId])).rows;
  return { run, usage: usage.map((u) => [u.model, u.prompt_tokens, u.completion_tokens]) };
}

/**
 * The status and problem code of a refused call, sent as the SDK sends it (the proxy's refusals are
 * problem documents, which the SDK reads as an error without an OpenAI error body).
 */
async function refusal(runId: string, endpoint: 'responses' | 'embeddings', body: Record<string, unknown>, org: BuiltOrg = w.org): Promise<{ status: number; code: string }> {
  const { key } = await aKey(w.app.deps.database.pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, scopes: ['llm-proxy:call'] });
  const res = await call(w.app.url, 'POST', `/api/llm-proxy/${endpoint}`, { key, body, headers: { 'x-run-id': runId } });
  return { status: res.status, code: res.body?.code };
}

before(async () => {
  w = await aModelWorld({ env: { LLM_PROXY_LIMITS: '{"rate_per_min":40,"max_request_bytes":8192}' } });
  const credential = await aCredential(w);
  models.chat = (await aModel(w, credential.id, { is_default: true })).id;
  models.embed = (await aModel(w, credential.id, { model: 'fake-embed', name: 'Embeddings' })).id;
  const second = await aCredential(w, { name: 'Reasoning' });
  models.reasoner = (await aModel(w, second.id, { name: 'Reasoner', supports_temperature: false, reasoning_levels: ['low', 'high'], reasoning_effort: 'low' })).id;
  const anthropic = await aCredential(w, { provider: 'anthropic', name: 'Anthropic', base_url: w.model.url });
  models.anthropic = (await aModel(w, anthropic.id, { name: 'Claude' })).id;
});
after(() => w.close());

describe('the Responses API', () => {
  test("answers with the run's model and the organization's key; the usage lands in the run's ledger", async () => {
    const runId = await aRun(w.org);
    const openai = await openaiFor(runId);
    const response = await openai.responses.create({ model: 'gpt-anything', input: 'Say something.', instructions: 'Be brief.' });
    assert.equal(response.object, 'response');
    assert.equal(response.output_text, 'done');
    const seen = w.model.requests.at(-1)!;
    assert.equal(seen.endpoint, 'responses');
    assert.equal(seen.model, 'fake', "the run's model, whatever the body named");
    assert.equal(seen.authorization, `Bearer ${PROVIDER_KEY}`);
    assert.deepEqual((await ledger(runId)).usage, [['fake', 10, 5]]);
  });

  test('a streamed response is relayed event by event, and its usage (in response.completed) is recorded', async () => {
    const runId = await aRun(w.org);
    const openai = await openaiFor(runId);
    const stream = openai.responses.stream({ model: 'fake-text', input: [{ role: 'user', content: 'Say something.' }] });
    const deltas: string[] = [];
    const kinds: string[] = [];
    stream.on('event', (e) => kinds.push(e.type));
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    assert.equal(deltas.length, 2, 'two deltas, as the provider sent them');
    assert.equal(deltas.join(''), 'done');
    assert.equal(final.output_text, 'done');
    assert.equal(kinds[0], 'response.created');
    assert.equal(kinds.at(-1), 'response.completed');
    const { run, usage } = await ledger(runId);
    assert.deepEqual(usage, [['fake', 10, 5]]);
    assert.deepEqual([Number(run.prompt_tokens), Number(run.completion_tokens)], [10, 5]);
  });

  test("the call's reasoning effort, else the run's, else the model's, checked against the model", async () => {
    const runId = await aRun(w.org, { modelId: models.reasoner, settings: { reasoning_effort: 'high' } });
    const openai = await openaiFor(runId);
    await openai.responses.create({ model: 'x', input: 'think' });
    assert.deepEqual(w.model.requests.at(-1)!.body.reasoning, { effort: 'high' }, "the run's setting");
    await openai.responses.create({ model: 'x', input: 'think', reasoning: { effort: 'low', summary: 'auto' } });
    assert.deepEqual(w.model.requests.at(-1)!.body.reasoning, { effort: 'low', summary: 'auto' }, "the call's own");
    const before = w.model.requests.length;
    assert.deepEqual(await refusal(runId, 'responses', { model: 'x', input: 'think', temperature: 0.4 }), { status: 400, code: 'temperature_unsupported' });
    assert.deepEqual(await refusal(runId, 'responses', { model: 'x', input: 'think', reasoning: { effort: 'medium' } }), { status: 400, code: 'reasoning_level_unsupported' });
    assert.equal(w.model.requests.length, before, 'refused before the provider');
  });
});

describe('embeddings', () => {
  test("a model of the organization, named by its provider name or id, embeds with the organization's key; usage recorded", async () => {
    const runId = await aRun(w.org);
    const openai = await openaiFor(runId);
    // the SDK asks for base64 and decodes it
    const byName = await openai.embeddings.create({ model: 'fake-embed', input: ['one two three', 'four'] });
    assert.equal(byName.data.length, 2);
    assert.equal(byName.data[0].embedding.length, 8);
    assert.deepEqual(byName.usage, { prompt_tokens: 4, total_tokens: 4 });
    const seen = w.model.requests.at(-1)!;
    assert.deepEqual([seen.endpoint, seen.model, seen.authorization], ['embeddings', 'fake-embed', `Bearer ${PROVIDER_KEY}`]);
    const byId = await openai.embeddings.create({ model: models.embed, input: 'one two three', encoding_format: 'float' });
    assert.deepEqual(byId.data[0].embedding.map((v) => Math.round(v * 1e4)), byName.data[0].embedding.map((v) => Math.round(v * 1e4)));
    assert.deepEqual((await ledger(runId)).usage, [['fake-embed', 4, 0], ['fake-embed', 3, 0]], 'in the order of the calls');
  });

  test('a model the organization has not added is 400 model_not_configured; a model the provider does not embed with is 400 model_not_offered', async () => {
    const runId = await aRun(w.org);
    const before = w.model.requests.length;
    assert.deepEqual(await refusal(runId, 'embeddings', { model: 'text-embedding-3-large', input: 'x' }), { status: 400, code: 'model_not_configured' });
    assert.equal(w.model.requests.length, before, 'no provider call for a model the organization does not have');
    // the run's chat model: the provider answers 404
    assert.deepEqual(await refusal(runId, 'embeddings', { model: 'fake', input: 'x' }), { status: 400, code: 'model_not_offered' });
    assert.equal(w.model.requests.length, before + 1);
    assert.deepEqual((await ledger(runId)).usage, [], 'nothing answered, nothing recorded');
  });
});

describe('providers and budgets', () => {
  test('a provider whose OpenAI compatibility is chat only is 400 model_not_offered for responses and embeddings, before any call; its chat still answers', async () => {
    const runId = await aRun(w.org, { modelId: models.anthropic });
    const openai = await openaiFor(runId);
    const before = w.model.requests.length;
    assert.deepEqual(await refusal(runId, 'responses', { model: 'x', input: 'hi' }), { status: 400, code: 'model_not_offered' });
    assert.deepEqual(await refusal(runId, 'embeddings', { model: models.anthropic, input: 'hi' }), { status: 400, code: 'model_not_offered' });
    assert.equal(w.model.requests.length, before);
    const chat = await openai.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(chat.choices[0].message.content, 'done');
  });

  test('the run budget ends a run through responses as through chat; the month\'s budget refuses embeddings with 402', async () => {
    const org = await anOrg(w.app.deps.database.pool);
    const { cookie } = await aSession(w.app.deps.database.pool, org.ownerId);
    const credential = (await call(w.app.url, 'POST', '/api/model-provider-credentials', {
      cookie, org: org.orgId, body: { provider: 'openai-compatible', name: 'Local', base_url: w.model.url, api_key: PROVIDER_KEY },
    })).body;
    for (const body of [{ model: 'fake', name: 'Fake', is_default: true }, { model: 'fake-embed', name: 'Embed' }]) {
      assert.equal((await call(w.app.url, 'POST', '/api/models', { cookie, org: org.orgId, body: { credential_id: credential.id, ...body } })).status, 201);
    }
    assert.equal((await call(w.app.url, 'PUT', `/api/orgs/${org.orgId}/budget`, { cookie, body: { run_max_tokens: 20 } })).status, 200);
    const runId = await aRun(org);
    const openai = await openaiFor(runId, org);
    await openai.responses.create({ model: 'x', input: 'one' });
    assert.equal((await ledger(runId)).run.status, 'running', 'under its budget after 15 tokens');
    await openai.responses.create({ model: 'x', input: 'two' });
    const ended = await ledger(runId);
    assert.equal(ended.run.status, 'failed', 'the call that crossed 20 tokens was answered, and the run ended');
    assert.equal(ended.run.error.code, 'run_budget_exceeded');

    // the month so far: 30 tokens
    await call(w.app.url, 'PUT', `/api/orgs/${org.orgId}/budget`, { cookie, body: { monthly_max_tokens: 30 } });
    const another = await aRun(org);
    const before = w.model.requests.length;
    assert.deepEqual(await refusal(another, 'embeddings', { model: 'fake-embed', input: 'x' }, org), { status: 402, code: 'org_budget_exceeded' });
    assert.equal(w.model.requests.length, before);
  });

  test('each endpoint has its LLM_PROXY_LIMITS row and needs X-Run-Id naming an open run of the space', async () => {
    const runId = await aRun(w.org);
    const { key } = await aKey(w.app.deps.database.pool, { orgId: w.org.orgId, spaceId: w.org.spaceId, userId: w.org.ownerId, scopes: ['llm-proxy:call'] });
    for (const [path, body] of [['/api/llm-proxy/responses', { input: 'x' }], ['/api/llm-proxy/embeddings', { model: 'fake-embed', input: 'x' }]] as const) {
      const answered = await call(w.app.url, 'POST', path, { key, body, headers: { 'x-run-id': runId } });
      assert.equal(answered.status, 200, answered.text);
      assert.equal(answered.headers.get('ratelimit-policy'), '40;w=60');
      const other = await anOrg(w.app.deps.database.pool);
      const elsewhere = await aRun(other);
      const refused = await call(w.app.url, 'POST', path, { key, body, headers: { 'x-run-id': elsewhere } });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.code, 'usage_context_required');
      const big = await call(w.app.url, 'POST', path, { key, body: { ...body, input: 'x'.repeat(9000) }, headers: { 'x-run-id': runId } });
      assert.equal(big.status, 413);
      assert.equal(big.body.code, 'payload_too_large');
      const shapeless = await call(w.app.url, 'POST', path, { key, body: { model: 'x' }, headers: { 'x-run-id': runId } });
      assert.equal(shapeless.status, 400);
      assert.equal(shapeless.body.code, 'invalid_request');
    }
  });
});
