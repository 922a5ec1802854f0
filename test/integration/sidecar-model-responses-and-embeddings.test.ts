// The agent's model endpoint in its sidecar serves what OpenAI clients call besides chat
// completions: the Responses API (the run's model, the run's settings under the call's) and
// embeddings (the run's model, or an organization model on the same credential), where the
// provider offers them (model_not_offered otherwise); usage becomes metric events and counts
// against the run's budget as chat does. The platform tells the sidecar what the provider offers
// and which models it may embed with.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { runMaterialsFor } from '../../bin/sandbox.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { anOrg } from '../support/builders.ts';
import { aCredential, aModel, aModelWorld } from './models-harness.ts';
import { aSidecarAssignment, aSidecarToken, bearer, REAL_MODEL_KEY, sidecarUrlOf, spawnWarm, startEventReceiver } from './sidecar-run-harness.ts';

const OFFERS_ALL = { offers: ['responses', 'embeddings'], embeddingModels: ['fake-text', 'fake-embed'] };

describe("the sidecar's Responses API and embeddings", () => {
  let model: FakeModel;
  before(async () => {
    model = await startFakeModel({ usage: { prompt_tokens: 7, completion_tokens: 3 } });
  });
  after(() => model.close());

  async function aSidecar(assigned: Record<string, unknown>, budget?: unknown) {
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret);
    const sidecar = await spawnWarm('sidecar/main.ts');
    const token = aSidecarToken();
    sidecar.assign({
      ...aSidecarAssignment({ token, eventsUrl: `${receiver.url}/events`, eventSecret: secret, model: { baseUrl: model.url, apiKey: REAL_MODEL_KEY, model: 'fake-text', ...assigned } }),
      ...(budget ? { budget } : {}),
    });
    await receiver.waitFor((events) => events.some((e) => e.type === 'started'));
    const url = sidecarUrlOf(sidecar);
    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: token, maxRetries: 0 });
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${url}/v1/${path}`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as any };
    };
    const metrics = () => receiver.events.filter((e) => e.type === 'metric').map((e) => e.data);
    return { receiver, openai, post, metrics, stop: async () => (await sidecar.kill(), await receiver.close()) };
  }

  test("a response is made by the run's model with the real key, JSON or streamed; each call's usage is a metric event", async (t) => {
    const run = await aSidecar(OFFERS_ALL);
    t.after(() => run.stop());
    const first = model.requests.length;
    const response = await run.openai.responses.create({ model: 'gpt-anything', input: 'Say something.' });
    assert.equal(response.object, 'response');
    assert.equal(response.output_text, 'Here is my answer in plain text.');

    const stream = await run.openai.responses.create({ model: 'gpt-anything', input: 'Again.', stream: true });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    assert.equal(text, 'Here is my answer in plain text.');
    assert.equal(types.at(-1), 'response.completed');

    const seen = model.requests.slice(first);
    assert.deepEqual(seen.map((r) => [r.endpoint, r.model, r.authorization]), [
      ['responses', 'fake-text', `Bearer ${REAL_MODEL_KEY}`],
      ['responses', 'fake-text', `Bearer ${REAL_MODEL_KEY}`],
    ]);
    await run.receiver.waitFor(() => run.metrics().length === 2);
    for (const metric of run.metrics()) assert.deepEqual(metric, { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10, model: 'fake-text' });
  });

  test("a response takes the call's reasoning effort, else the run's; a setting the model refuses is refused before the provider", async (t) => {
    const run = await aSidecar({
      ...OFFERS_ALL,
      defaults: { temperature: null, reasoningEffort: 'high' },
      accepts: { supportsTemperature: false, reasoningLevels: ['low', 'high'] },
    });
    t.after(() => run.stop());
    assert.equal((await run.post('responses', { input: 'hi' })).status, 200);
    assert.deepEqual(model.requests.at(-1)?.body.reasoning, { effort: 'high' });
    assert.equal((await run.post('responses', { input: 'hi', reasoning: { effort: 'low', summary: 'auto' } })).status, 200);
    assert.deepEqual(model.requests.at(-1)?.body.reasoning, { effort: 'low', summary: 'auto' });

    const before = model.requests.length;
    const hot = await run.post('responses', { input: 'hi', temperature: 0.4 });
    assert.equal(hot.status, 400);
    assert.equal(hot.body.error.code, 'temperature_unsupported');
    const medium = await run.post('responses', { input: 'hi', reasoning: { effort: 'medium' } });
    assert.equal(medium.body.error.code, 'reasoning_level_unsupported');
    const shapeless = await run.post('responses', { messages: [] });
    assert.equal(shapeless.status, 400);
    assert.equal(shapeless.body.error.type, 'invalid_request_error');
    assert.equal(model.requests.length, before, 'nothing refused reached the provider');
  });

  test('embeddings: a model on the run\'s credential embeds with the real key; another is model_not_configured; one the provider does not embed with is model_not_offered', async (t) => {
    const run = await aSidecar(OFFERS_ALL);
    t.after(() => run.stop());
    const first = model.requests.length;
    const embedded = await run.openai.embeddings.create({ model: 'fake-embed', input: ['one two three', 'four'] });
    assert.equal(embedded.data.length, 2);
    assert.equal(embedded.model, 'fake-embed');
    assert.deepEqual([model.requests.at(-1)?.endpoint, model.requests.at(-1)?.model, model.requests.at(-1)?.authorization], ['embeddings', 'fake-embed', `Bearer ${REAL_MODEL_KEY}`]);
    await run.receiver.waitFor(() => run.metrics().length === 1);
    assert.deepEqual(run.metrics()[0], { prompt_tokens: 4, completion_tokens: 0, total_tokens: 4, model: 'fake-embed' });

    const other = await run.post('embeddings', { model: 'text-embedding-3-large', input: 'hi' });
    assert.equal(other.status, 400);
    assert.equal(other.body.error.code, 'model_not_configured');
    const malformed = await run.post('embeddings', { model: 7, input: 'hi' });
    assert.deepEqual([malformed.status, malformed.body.error.type], [400, 'invalid_request_error']);
    assert.equal(model.requests.length, first + 1, 'a model the run may not use is never called');
    // no model named: the run's own, which the provider does not embed with (its 404)
    const own = await run.post('embeddings', { input: 'hi' });
    assert.equal(own.status, 400);
    assert.equal(own.body.error.code, 'model_not_offered');
    assert.equal(model.requests.at(-1)?.model, 'fake-text');
    assert.doesNotMatch(JSON.stringify(own.body), /does not exist/, "the provider's own answer is not relayed");
  });

  test('a provider offering chat completions only: responses and embeddings are model_not_offered before any call, chat still answers', async (t) => {
    const run = await aSidecar({});
    t.after(() => run.stop());
    const before = model.requests.length;
    const responses = await run.post('responses', { input: 'hi' });
    assert.deepEqual([responses.status, responses.body.error.code], [400, 'model_not_offered']);
    const embeddings = await run.post('embeddings', { model: 'fake-text', input: 'hi' });
    assert.deepEqual([embeddings.status, embeddings.body.error.code], [400, 'model_not_offered']);
    assert.equal(model.requests.length, before);
    const chat = await run.post('chat/completions', { messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(chat.status, 200);
  });

  test('the run budget counts responses and embeddings: the call reaching it ends the run, the next is refused 402 uncalled', async (t) => {
    const run = await aSidecar(OFFERS_ALL, { run: { maxTokens: 14, maxCostUsd: null }, org: null });
    t.after(() => run.stop());
    const before = model.requests.length;
    assert.equal((await run.post('embeddings', { model: 'fake-embed', input: 'one two three four' })).status, 200); // 4 tokens
    assert.equal(run.receiver.events.some((e) => e.type === 'failed'), false);
    assert.equal((await run.post('responses', { input: 'hi' })).status, 200); // 14 tokens: reached
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'failed'));
    assert.equal((run.receiver.events.find((e) => e.type === 'failed')!.data as { code: string }).code, 'run_budget_exceeded');
    const refused = await run.post('embeddings', { model: 'fake-embed', input: 'more' });
    assert.deepEqual([refused.status, refused.body.error.code], [402, 'run_budget_exceeded']);
    assert.equal(model.requests.length, before + 2);
  });
});

describe('what the platform assigns the sidecar', () => {
  test("the provider's offers, and the organization's enabled models on the run model's credential to embed with", async (t) => {
    const w = await aModelWorld();
    t.after(() => w.close());
    const shared = await aCredential(w, { name: 'Shared' });
    const chat = (await aModel(w, shared.id, { name: 'Chat', is_default: true })).id;
    await aModel(w, shared.id, { model: 'fake-embed', name: 'Embed' });
    const off = (await aModel(w, shared.id, { model: 'fake-off', name: 'Off' })).id;
    await w.app.deps.database.pool.query('UPDATE models SET enabled = false WHERE id = $1', [off]);
    const elsewhere = await aCredential(w, { name: 'Elsewhere' });
    await aModel(w, elsewhere.id, { model: 'fake-elsewhere', name: 'Elsewhere' });
    const anthropic = await aCredential(w, { provider: 'anthropic', name: 'Anthropic', base_url: w.model.url });
    const claude = (await aModel(w, anthropic.id, { name: 'Claude' })).id;

    const materials = runMaterialsFor(w.app.deps);
    const scope = { pool: w.app.deps.database.pool, db: w.app.deps.database.db, orgId: w.org.orgId, actor: { userId: w.org.ownerId } };
    const openaiCompatible = await materials.model(scope, chat);
    assert.deepEqual(openaiCompatible.offers, ['responses', 'embeddings']);
    assert.deepEqual(openaiCompatible.embeddingModels, ['fake', 'fake-embed'], "the run's model first; not a disabled one, not another credential's");
    const chatOnly = await materials.model(scope, claude);
    assert.deepEqual(chatOnly.offers, []);
    assert.deepEqual(chatOnly.embeddingModels, ['fake']);
    // another organization's model with the same id is out of reach
    const stranger = await anOrg(w.app.deps.database.pool);
    await assert.rejects(materials.model({ ...scope, orgId: stranger.orgId, actor: { userId: stranger.ownerId } }, chat), { code: 'model_not_configured' });
  });
});
