// A run's model calls leave its sidecar through the organization's default proxy when the
// assignment names one: a real sidecar process, a CONNECT proxy and the scripted model on loopback.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { startConnectProxy } from '../support/connect-proxy.ts';
import { aSidecarAssignment, aSidecarToken, bearer, REAL_MODEL_KEY, sidecarUrlOf, spawnWarm, startEventReceiver } from './sidecar-run-harness.ts';

const model = await startFakeModel();
const proxy = await startConnectProxy({ credentials: { username: 'run', password: 'proxy-secret' } });
after(async () => {
  await proxy.close();
  await model.close();
});

async function aSidecar(password: string) {
  const secret = newRunEventSecret();
  const receiver = await startEventReceiver(secret);
  const sidecar = await spawnWarm('sidecar/main.ts');
  const token = aSidecarToken();
  const assignedModel = { baseUrl: model.url, apiKey: REAL_MODEL_KEY, model: 'fake-text' };
  sidecar.assign({
    ...aSidecarAssignment({
      token,
      eventsUrl: `${receiver.url}/events`,
      eventSecret: secret,
      model: assignedModel,
      egressAllowInternalHosts: [new URL(model.url).host, new URL(proxy.url).host],
    }),
    model: { ...assignedModel, proxy: { url: proxy.url, username: 'run', password } },
  });
  await receiver.waitFor((events) => events.length >= 1);
  return { url: sidecarUrlOf(sidecar), auth: bearer(token), stop: async () => (await sidecar.kill(), await receiver.close()) };
}

const completion = (run: { url: string; auth: Record<string, string> }) => fetch(`${run.url}/v1/chat/completions`, {
  method: 'POST',
  headers: { ...run.auth, 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'anything', messages: [{ role: 'user', content: 'hi' }] }),
});

test('the sidecar calls the model through the proxy, asking it for the checked address with the credentials', async (t) => {
  const run = await aSidecar('proxy-secret');
  t.after(() => run.stop());
  const before = proxy.connects.length;
  const res = await completion(run);
  assert.equal(res.status, 200);
  assert.equal(((await res.json()) as any).choices[0].message.content, 'Here is my answer in plain text.');
  const seen = proxy.connects.slice(before);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].authority, `127.0.0.1:${new URL(model.url).port}`);
  assert.equal(seen[0].authorization, `Basic ${Buffer.from('run:proxy-secret').toString('base64')}`);
  assert.equal(model.requests.at(-1)?.authorization, `Bearer ${REAL_MODEL_KEY}`);
});

test('a proxy refusing the credentials fails the call (502) and the model is never reached', async (t) => {
  const run = await aSidecar('wrong');
  t.after(() => run.stop());
  const before = model.requests.length;
  const res = await completion(run);
  assert.equal(res.status, 502);
  assert.match(JSON.stringify(await res.json()), /proxy/);
  assert.equal(model.requests.length, before);
});
