import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { aSidecarAssignment, aSidecarToken, bearer, REAL_MODEL_KEY, sidecarUrlOf, spawnWarm, startEventReceiver, typesInOrder } from './sidecar-run-harness.ts';

describe('the sidecar model endpoint', () => {
  let model: FakeModel;
  before(async () => {
    model = await startFakeModel({ usage: { prompt_tokens: 7, completion_tokens: 3 } });
  });
  after(async () => {
    await model.close();
  });

  async function aSidecar(modelName: string, opts: { egressAllowInternalHosts?: string[] } = {}) {
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret);
    const sidecar = await spawnWarm('sidecar/main.ts');
    const token = aSidecarToken();
    const assign = () =>
      sidecar.assign(
        aSidecarAssignment({
          token,
          eventsUrl: `${receiver.url}/events`,
          eventSecret: secret,
          model: { baseUrl: model.url, apiKey: REAL_MODEL_KEY, model: modelName },
          ...opts,
        }),
      );
    return { receiver, sidecar, url: sidecarUrlOf(sidecar), auth: bearer(token), assign, stop: async () => (await sidecar.kill(), await receiver.close()) };
  }

  test('answers 503 until assigned, then relays JSON and SSE completions with the real key and model', async (t) => {
    const run = await aSidecar('fake-text');
    t.after(() => run.stop());
    assert.equal((await fetch(`${run.url}/v1/models`)).status, 503);
    assert.equal((await fetch(`${run.url}/mcp`, { method: 'POST', body: '{}' })).status, 503);

    run.assign();
    await run.receiver.waitFor((events) => events.length >= 1);
    const models = (await (await fetch(`${run.url}/v1/models`, { headers: run.auth })).json()) as any;
    assert.deepEqual(models.data.map((m: { id: string }) => m.id), ['fake-text']);

    const firstRequest = model.requests.length;
    const plain = await fetch(`${run.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...run.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-anything', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(plain.status, 200);
    const body = (await plain.json()) as any;
    assert.equal(body.choices[0].message.content, 'Here is my answer in plain text.');
    assert.deepEqual(body.usage, { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });

    const streamed = await fetch(`${run.url}/v1/chat/completions`, {
      method: 'POST',
      headers: run.auth,
      body: JSON.stringify({ model: 'gpt-anything', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(streamed.status, 200);
    assert.match(streamed.headers.get('content-type') ?? '', /text\/event-stream/);
    const chunks = (await streamed.text())
      .split('\n')
      .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
      .map((l) => JSON.parse(l.slice(6)));
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'Here is my answer in plain text.');
    assert.deepEqual(chunks.at(-1).usage, { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });

    const seen = model.requests.slice(firstRequest);
    assert.deepEqual(seen.map((r) => r.model), ['fake-text', 'fake-text']);
    assert.deepEqual(seen.map((r) => r.authorization), [`Bearer ${REAL_MODEL_KEY}`, `Bearer ${REAL_MODEL_KEY}`]);
    assert.deepEqual(seen[1].body.stream_options, { include_usage: true }, 'usage asked for on the agent’s behalf');

    await run.receiver.waitFor((events) => events.filter((e) => e.type === 'metric').length === 2);
    assert.deepEqual(typesInOrder(run.receiver.events), ['started', 'metric', 'metric']);
    for (const e of run.receiver.events.slice(1)) {
      assert.deepEqual(e.data, { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10, model: 'fake-text' });
    }
  });

  test('a failing provider gives the agent a 502 without the provider’s answer, and a warning in the run log', async (t) => {
    const run = await aSidecar('fake-error');
    t.after(() => run.stop());
    run.assign();
    await run.receiver.waitFor((events) => events.length >= 1);
    const res = await fetch(`${run.url}/v1/chat/completions`, {
      method: 'POST',
      headers: run.auth,
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 502);
    const text = await res.text();
    assert.doesNotMatch(text, /scripted upstream failure/);
    assert.ok(!text.includes(REAL_MODEL_KEY));
    assert.equal(JSON.parse(text).error.type, 'upstream_error');
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'log'));
    const log = run.receiver.events.find((e) => e.type === 'log');
    assert.deepEqual(log?.data, { level: 'warn', message: 'model provider answered 500' });
    assert.ok(!run.sidecar.stderr().includes(REAL_MODEL_KEY));

    const notJson = await fetch(`${run.url}/v1/chat/completions`, { method: 'POST', headers: run.auth, body: 'nope' });
    assert.equal(notJson.status, 400);
  });

  test('a provider at an internal address the operator did not allow is refused by the egress guard, and never called', async (t) => {
    const run = await aSidecar('fake-text', { egressAllowInternalHosts: [] });
    t.after(() => run.stop());
    run.assign();
    await run.receiver.waitFor((events) => events.length >= 1);
    const calls = model.requests.length;
    const res = await fetch(`${run.url}/v1/chat/completions`, {
      method: 'POST',
      headers: run.auth,
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 502);
    assert.equal(((await res.json()) as { error: { type: string } }).error.type, "upstream_error");
    assert.equal(model.requests.length, calls, 'the provider was not reached');
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'log'));
    const log = run.receiver.events.find((e) => e.type === 'log');
    assert.match(String((log?.data as { message?: string })?.message), /refused by the egress guard: .*127\.0\.0\.1.*loopback/);
  });
});

describe('the sidecar model endpoint while its provider refuses connections', () => {
  test('a call made while nothing listens at the provider\'s address is answered once the provider is back', async (t) => {
    // a port nothing listens on yet: the provider (or the worker relaying a local one) is down
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret);
    const sidecar = await spawnWarm('sidecar/main.ts');
    let model: FakeModel | undefined;
    t.after(async () => {
      await sidecar.kill();
      await receiver.close();
      await model?.close();
    });
    const token = aSidecarToken();
    sidecar.assign(aSidecarAssignment({ token, eventsUrl: `${receiver.url}/events`, eventSecret: secret, model: { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: REAL_MODEL_KEY, model: 'fake-text' } }));
    await receiver.waitFor((events) => events.length >= 1);
    const call = fetch(`${sidecarUrlOf(sidecar)}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await new Promise((r) => setTimeout(r, 1_500));
    model = await startFakeModel({ port });
    const res = await call;
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(((await res.json()) as any).choices[0].message.content, 'Here is my answer in plain text.');
    assert.equal(model.requests.length, 1, 'one call reached the provider');
  });
});
