// Idempotency-Key on the wire, told twice: over the process-memory store and over Redis, with
// the same assertions. POST /api/end-users honors the key; its rows show whether the handler ran.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg, aSpace, aUser } from '../support/builders.ts';
import { call, type WireResponse } from '../support/http.ts';

for (const flavour of ['memory', 'redis'] as const) {
  describe(`Idempotency-Key over the ${flavour} store`, () => {
    let app: TestApp;
    let key: string;
    let sameSpaceKey: string;
    let readOnlyKey: string;
    let otherSpaceKey: string;
    let otherOrgKey: string;

    before(async () => {
      app = await startTestApp({ redis: flavour === 'redis' });
      const pool = app.deps.database.pool;
      const org = await anOrg(pool);
      ({ key } = await aKey(pool, { ...org, userId: org.ownerId }));
      ({ key: sameSpaceKey } = await aKey(pool, { ...org, userId: org.ownerId }));
      ({ key: readOnlyKey } = await aKey(pool, { ...org, userId: org.ownerId, scopes: ['end-users:read'] }));
      const spaceB = await aSpace(pool, org.orgId, { name: 'Second' });
      ({ key: otherSpaceKey } = await aKey(pool, { ...org, spaceId: spaceB, userId: org.ownerId }));
      const other = await anOrg(pool);
      ({ key: otherOrgKey } = await aKey(pool, { ...other, userId: other.ownerId }));
    });
    after(() => app.close());

    const createEndUser = (k: string, idem: string | undefined, body: unknown, path = '/api/end-users') =>
      call(app.url, 'POST', path, { key: k, body, headers: idem === undefined ? {} : { 'idempotency-key': idem } });
    const rowsWith = async (externalId: string) =>
      Number((await app.deps.database.pool.query('SELECT count(*) FROM end_users WHERE external_id = $1', [externalId])).rows[0].count);
    const replayed = (res: WireResponse) => res.headers.get('idempotent-replayed');

    test('the same key and request replays the stored response and the handler does not run again', async () => {
      const idem = randomUUID();
      const body = { externalId: `replay-${idem}`, name: 'Ada' };
      const first = await createEndUser(key, idem, body);
      assert.equal(first.status, 201);
      assert.equal(replayed(first), null);
      const again = await createEndUser(key, idem, body);
      assert.equal(again.status, 201);
      assert.equal(replayed(again), 'true');
      assert.match(again.headers.get('content-type')!, /^application\/json/);
      assert.deepEqual(again.body, first.body);
      assert.equal(await rowsWith(body.externalId), 1);
      // the stored response is replayed whole: its Request-Id names the request that made it
      assert.match(first.headers.get('request-id')!, /^req_/);
      assert.equal(again.headers.get('request-id'), first.headers.get('request-id'));
    });

    test('another caller of the same organization and space replays it too', async () => {
      const idem = randomUUID();
      const body = { externalId: `shared-${idem}`, name: 'Grace' };
      const first = await createEndUser(key, idem, body);
      const other = await createEndUser(sameSpaceKey, idem, body);
      assert.equal(other.status, 201);
      assert.equal(replayed(other), 'true');
      assert.deepEqual(other.body, first.body);
    });

    test('a 4xx answer is stored and replayed even after the cause went away', async () => {
      const externalId = `taken-${randomUUID()}`;
      const existing = await createEndUser(key, undefined, { externalId, name: 'First' });
      assert.equal(existing.status, 201);
      const idem = randomUUID();
      const refused = await createEndUser(key, idem, { externalId, name: 'Second' });
      assert.equal(refused.status, 409);
      assert.equal(refused.body.code, 'external_id_taken');
      await call(app.url, 'DELETE', `/api/end-users/${existing.body.id}`, { key });
      const again = await createEndUser(key, idem, { externalId, name: 'Second' });
      assert.equal(again.status, 409);
      assert.equal(replayed(again), 'true');
      assert.match(again.headers.get('content-type')!, /^application\/problem\+json/);
      assert.equal(again.body.code, 'external_id_taken');
      assert.equal(await rowsWith(externalId), 0, 'the handler did not run again');
      // header and body name one request, the first: the answer is that request's
      assert.equal(again.body.request_id, refused.body.request_id);
      assert.equal(again.headers.get('request-id'), again.body.request_id);
      assert.equal(again.body.instance, `urn:appstrate:request:${again.body.request_id}`);
    });

    test('the same key with another body, query or path answers 422 idempotency_conflict', async () => {
      const idem = randomUUID();
      const body = { externalId: `conflict-${idem}`, name: 'Linus' };
      assert.equal((await createEndUser(key, idem, body)).status, 201);
      const variants = [
        await createEndUser(key, idem, { ...body, name: 'Someone else' }),
        await createEndUser(key, idem, body, '/api/end-users?source=retry'),
        await createEndUser(key, idem, body, '/api/runs/inline'),
      ];
      for (const res of variants) {
        assert.equal(res.status, 422, res.text);
        assert.equal(res.body.code, 'idempotency_conflict');
        assert.equal(replayed(res), null);
      }
      assert.equal(await rowsWith(body.externalId), 1);
    });

    test('keys are scoped to the organization and space: elsewhere the same key runs afresh', async () => {
      const idem = randomUUID();
      const body = { externalId: `scoped-${idem}`, name: 'Barbara' };
      const here = await createEndUser(key, idem, body);
      const otherSpace = await createEndUser(otherSpaceKey, idem, body);
      const otherOrg = await createEndUser(otherOrgKey, idem, body);
      for (const res of [otherSpace, otherOrg]) {
        assert.equal(res.status, 201);
        assert.equal(replayed(res), null);
        assert.notEqual(res.body.id, here.body.id);
      }
      assert.equal(await rowsWith(body.externalId), 3);
    });

    test('permissions are checked before a replay: a caller lacking end-users:write gets 403', async () => {
      const idem = randomUUID();
      const body = { externalId: `perm-${idem}`, name: 'Edsger' };
      assert.equal((await createEndUser(key, idem, body)).status, 201);
      const res = await createEndUser(readOnlyKey, idem, body);
      assert.equal(res.status, 403);
      assert.equal(res.body.code, 'forbidden');
      assert.equal(replayed(res), null);
    });

    test('a key of 255 characters is honored; 256 answers 400 invalid_idempotency_key', async () => {
      const ok = await createEndUser(key, 'k'.repeat(255), { externalId: `long-${randomUUID()}`, name: 'Alan' });
      assert.equal(ok.status, 201);
      const externalId = `too-long-${randomUUID()}`;
      const res = await createEndUser(key, 'k'.repeat(256), { externalId, name: 'Alan' });
      assert.equal(res.status, 400);
      assert.equal(res.body.code, 'invalid_idempotency_key');
      assert.equal(res.body.param, 'Idempotency-Key');
      assert.equal(await rowsWith(externalId), 0);
    });

    test('a PATCH, DELETE or POST that does not declare the header answers 400 idempotency_not_supported', async () => {
      const created = await createEndUser(key, undefined, { externalId: `ns-${randomUUID()}`, name: 'Before' });
      const headers = { 'idempotency-key': randomUUID() };
      const attempts = [
        await call(app.url, 'PATCH', `/api/end-users/${created.body.id}`, { key, headers, body: { name: 'After' } }),
        await call(app.url, 'DELETE', `/api/end-users/${created.body.id}`, { key, headers }),
        await call(app.url, 'POST', '/api/runs/inline/validate', { key, headers, body: {} }),
      ];
      for (const res of attempts) {
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.code, 'idempotency_not_supported');
        assert.equal(res.body.param, 'Idempotency-Key');
      }
      const still = await call(app.url, 'GET', `/api/end-users/${created.body.id}`, { key });
      assert.equal(still.status, 200);
      assert.equal(still.body.name, 'Before', 'neither the PATCH nor the DELETE ran');
    });

    test('GET ignores the header', async () => {
      const headers = { 'idempotency-key': randomUUID() };
      for (let i = 0; i < 2; i++) {
        const res = await call(app.url, 'GET', '/api/end-users', { key, headers });
        assert.equal(res.status, 200);
        assert.equal(replayed(res), null);
      }
    });

    test('/api/auth/* neither honors nor refuses it', async () => {
      const headers = { 'idempotency-key': randomUUID() };
      const signUp = (email: string) =>
        call(app.url, 'POST', '/api/auth/sign-up/email', { headers, body: { email, password: 'a long enough password 123', name: 'New' } });
      const first = await signUp(`one-${randomUUID()}@example.test`);
      const second = await signUp(`two-${randomUUID()}@example.test`);
      for (const res of [first, second]) {
        assert.equal(res.status, 201, res.text);
        assert.equal(replayed(res), null);
      }
      assert.notEqual(first.body.user.id, second.body.user.id, 'the second sign-up ran: no replay, no conflict');
      // A session route whose auth fails still answers its own error, not an idempotency one.
      const { email } = await aUser(app.deps.database.pool);
      const wrong = await call(app.url, 'POST', '/api/auth/sign-in/email', { headers, body: { email, password: 'not the password' } });
      assert.equal(wrong.status, 401);
    });
  });
}
