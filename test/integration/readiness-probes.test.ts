// Readiness tells the truth about what requests need: 503 unavailable, naming the part, while the
// database or the workflow engine does not answer (or answers too slowly); each probe is asked at
// most about once a second however often readiness is polled.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PROBE_CACHE_MS, PROBE_TIMEOUT_MS } from '../../api/lifecycle.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { call } from '../support/http.ts';

let app: TestApp;
before(async () => {
  app = await startTestApp();
});
after(() => app.close());

const settle = () => new Promise((r) => setTimeout(r, PROBE_CACHE_MS + 50));

test('ready while every probe answers; unavailable naming the one that fails, down or slow', async () => {
  const lc = app.deps.lifecycle;
  let engineUp = true;
  lc.probes = {
    database: async () => (await app.deps.database.pool.query('SELECT 1')).rowCount === 1,
    engine: async () => {
      if (!engineUp) throw new Error('connection refused');
      return true;
    },
  };
  await settle();
  const ok = await call(app.url, 'GET', '/health/ready');
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.body, { status: 'ok' });

  engineUp = false;
  await settle();
  const down = await call(app.url, 'GET', '/health/ready');
  assert.equal(down.status, 503);
  assert.deepEqual(down.body, { status: 'unavailable', checks: { database: 'ok', engine: 'unreachable' } });
  assert.equal(down.headers.get('retry-after'), '1');

  lc.probes.database = () => new Promise((r) => setTimeout(() => r(true), PROBE_TIMEOUT_MS * 3).unref());
  engineUp = true;
  await settle();
  const slow = await call(app.url, 'GET', '/health/ready');
  assert.equal(slow.status, 503);
  assert.deepEqual(slow.body.checks, { database: 'unreachable', engine: 'ok' });
});

test('polling readiness many times within a second asks each probe once', async () => {
  const lc = app.deps.lifecycle;
  let asked = 0;
  lc.probes = { engine: async () => (asked++, true) };
  await settle();
  const answers = await Promise.all(Array.from({ length: 20 }, () => call(app.url, 'GET', '/health/ready')));
  assert.ok(answers.every((a) => a.status === 200));
  assert.ok(asked <= 2, `asked ${asked} times`);
});

test('liveness does not depend on the probes', async () => {
  app.deps.lifecycle.probes = { database: async () => false };
  await settle();
  assert.equal((await call(app.url, 'GET', '/health/ready')).status, 503);
  assert.equal((await call(app.url, 'GET', '/health/live')).status, 200);
});
