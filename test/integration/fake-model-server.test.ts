import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startFakeModel } from '../fixtures/fake-model/server.ts';

const chat = (url: string, body: object, headers: Record<string, string> = {}) =>
  fetch(`${url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

test('the fake model answers like an OpenAI-compatible server and records who asked', async (t) => {
  const model = await startFakeModel({ latencyMs: 5, usage: { prompt_tokens: 2, completion_tokens: 1 } });
  t.after(() => model.close());
  assert.match(model.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);

  const models = (await (await fetch(`${model.url}/models`)).json()) as any;
  assert.ok(models.data.some((m: { id: string }) => m.id === 'fake-bad-output'));

  const plain = (await (await chat(model.url, { model: 'fake', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer k1' })).json()) as any;
  assert.equal(plain.choices[0].message.content, 'done');
  assert.deepEqual(plain.usage, { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 });

  const tools = [{ type: 'function', function: { name: 'output', parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } } }];
  const streamed = await (
    await chat(model.url, { model: 'fake', stream: true, stream_options: { include_usage: true }, tools, messages: [{ role: 'user', content: 'hi' }] })
  ).text();
  const chunks = streamed.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
  const args = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []).map((c: any) => c.function.arguments ?? '').join('');
  assert.deepEqual(JSON.parse(args), { n: 1 });
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'tool_calls');
  assert.deepEqual(chunks.at(-1).usage, { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 });
  assert.ok(streamed.trimEnd().endsWith('data: [DONE]'));

  assert.equal((await chat(model.url, { model: 'fake-error', messages: [] })).status, 500);
  assert.deepEqual(model.requests.map((r) => [r.model, r.authorization]), [['fake', 'Bearer k1'], ['fake', undefined], ['fake-error', undefined]]);
});

test('fake-hang holds the request until the server closes', async () => {
  const model = await startFakeModel();
  const pending = chat(model.url, { model: 'fake-hang', messages: [] }).then(
    () => 'answered',
    () => 'cut',
  );
  const early = await Promise.race([pending, new Promise((r) => setTimeout(() => r('still waiting'), 300))]);
  assert.equal(early, 'still waiting');
  await model.close();
  assert.equal(await pending, 'cut');
});

test('the fake model answers the Responses API and embeddings as an OpenAI client (the official SDK) expects', async (t) => {
  const model = await startFakeModel({ usage: { prompt_tokens: 4, completion_tokens: 3 } });
  t.after(() => model.close());
  const openai = new OpenAI({ apiKey: 'k2', baseURL: model.url, maxRetries: 0 });

  const plain = await openai.responses.create({ model: 'fake-text', input: 'hi' });
  assert.equal(plain.object, 'response');
  assert.equal(plain.output_text, 'Here is my answer in plain text.');
  assert.deepEqual([plain.usage?.input_tokens, plain.usage?.output_tokens], [4, 3]);

  const tools = [{ type: 'function' as const, name: 'output', strict: false, parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } }];
  const called = await openai.responses.create({ model: 'fake', input: [{ role: 'user', content: 'hi' }], tools });
  const call = called.output.find((o) => o.type === 'function_call');
  assert.ok(call && call.type === 'function_call');
  assert.equal(call.name, 'output');
  assert.deepEqual(JSON.parse(call.arguments), { n: 1 });

  const stream = openai.responses.stream({ model: 'fake-text', input: 'hi' });
  const deltas: string[] = [];
  stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
  const final = await stream.finalResponse();
  assert.equal(deltas.length, 2);
  assert.equal(deltas.join(''), 'Here is my answer in plain text.');
  assert.equal(final.output_text, 'Here is my answer in plain text.');
  assert.equal(final.usage?.total_tokens, 7);

  const floats = await openai.embeddings.create({ model: 'fake-embed', input: ['one two', 'three'], encoding_format: 'float' });
  assert.deepEqual(floats.usage, { prompt_tokens: 3, total_tokens: 3 });
  assert.equal(floats.data.length, 2);
  assert.equal(floats.data[0].embedding.length, 8);
  // the SDK asks for base64 by default and decodes it: the same vectors
  const decoded = await openai.embeddings.create({ model: 'fake-embed', input: ['one two', 'three'] });
  assert.deepEqual(decoded.data.map((d) => d.embedding.map((v) => Math.round(v * 1e4))), floats.data.map((d) => d.embedding.map((v) => Math.round(v * 1e4))));
  await assert.rejects(openai.embeddings.create({ model: 'fake', input: 'x' }), (err: any) => err.status === 404 && err.code === 'model_not_found');
  assert.deepEqual(model.requests.map((r) => r.endpoint), ['responses', 'responses', 'responses', 'embeddings', 'embeddings', 'embeddings']);
});
