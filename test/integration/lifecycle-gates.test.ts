// The starting and shutdown gates: every gated request answers 503 starting until boot completes;
// while draining, new writes answer 503 shutting_down, reads are still served, and a write that
// was already in flight completes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';

let app: TestApp;
let key: string;
let endUserId: string;

before(async () => {
  app = await startTestApp({ notReady: true, env: { SHUTDOWN_DRAIN_SECONDS: '7' } });
  const org = await anOrg(app.deps.database.pool);
  ({ key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId }));
});
after(() => app.close());

const signIn = () => call(app.url, 'POST', '/api/auth/sign-in/email', { body: { email: 'nobody@example.test', password: 'whatever it is' } });

describe('while starting', () => {
  test('API reads, writes and /api/auth/* answer 503 starting with retry_after', async () => {
    const attempts = [
      await call(app.url, 'GET', '/api/end-users', { key }),
      await call(app.url, 'POST', '/api/end-users', { key, body: { externalId: 'x', name: 'y' } }),
      await signIn(),
    ];
    for (const res of attempts) {
      assert.equal(res.status, 503);
      assert.equal(res.body.code, 'starting');
      assert.equal(res.headers.get('retry-after'), '1');
      assert.equal(res.body.retry_after, 1);
    }
  });

  test('/health/ready answers 503 starting; liveness and the documents are served', async () => {
    const ready = await call(app.url, 'GET', '/health/ready');
    assert.equal(ready.status, 503);
    assert.deepEqual(ready.body, { status: 'starting' });
    assert.ok(ready.headers.get('retry-after'));
    assert.equal((await call(app.url, 'GET', '/health/live')).status, 200);
    assert.equal((await call(app.url, 'GET', '/api/openapi.json')).status, 200);
  });
});

describe('once ready', () => {
  before(() => {
    app.deps.lifecycle.ready = true;
  });

  test('the same requests are served and /health/ready answers ok', async () => {
    const created = await call(app.url, 'POST', '/api/end-users', { key, body: { externalId: 'gates-1', name: 'Ready' } });
    assert.equal(created.status, 201);
    endUserId = created.body.id;
    assert.equal((await call(app.url, 'GET', '/api/end-users', { key })).status, 200);
    assert.deepEqual((await call(app.url, 'GET', '/health/ready')).body, { status: 'ok' });
  });
});

describe('while draining', () => {
  test('a write in flight completes; new writes answer 503 shutting_down; reads are served', async () => {
    const lc = app.deps.lifecycle;
    // A write whose body is still arriving when the drain begins.
    let finishBody!: () => void;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"externalId":"in-flight",'));
        finishBody = () => {
          c.enqueue(new TextEncoder().encode('"name":"Late"}'));
          c.close();
        };
      },
    });
    const inFlight = fetch(`${app.url}/api/end-users`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body, duplex: 'half',
    } as RequestInit);
    for (let i = 0; lc.inFlight === 0; i++) {
      assert.ok(i < 500, 'the in-flight write never reached the gate');
      await new Promise((r) => setTimeout(r, 10));
    }
    lc.draining = true;
    let idle = false;
    const drained = lc.idle().then(() => (idle = true));

    const writes = [
      await call(app.url, 'POST', '/api/end-users', { key, body: { externalId: 'during-drain', name: 'New' } }),
      await call(app.url, 'PATCH', `/api/end-users/${endUserId}`, { key, body: { name: 'Changed' } }),
      await call(app.url, 'DELETE', `/api/end-users/${endUserId}`, { key }),
      await signIn(),
    ];
    for (const res of writes) {
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.code, 'shutting_down');
      assert.equal(res.headers.get('retry-after'), '7');
      assert.equal(res.body.retry_after, 7);
    }
    const read = await call(app.url, 'GET', `/api/end-users/${endUserId}`, { key });
    assert.equal(read.status, 200);
    assert.equal(read.body.name, 'Ready', 'the refused PATCH did not run');
    assert.deepEqual((await call(app.url, 'GET', '/health/ready')).body, { status: 'draining' });
    assert.equal((await call(app.url, 'GET', '/health/ready')).status, 503);
    assert.equal((await call(app.url, 'GET', '/health/live')).status, 200);

    assert.equal(idle, false, 'the drain waits for the write in flight');
    finishBody();
    const done = await inFlight;
    assert.equal(done.status, 201);
    await drained;
    assert.equal(lc.inFlight, 0);
  });
});
