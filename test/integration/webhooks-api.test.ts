// The webhook records over HTTP: the spec's record and its secret (returned on create and rotate
// only, sealed at rest), Idempotency-Key on create, private targets refused (blocked_url) unless
// EGRESS_ALLOW_INTERNAL_HOSTS names host:port, the visibility rules of the list and of each row,
// the rate-limit rows, and the delivery rows a run's status change writes (one per matching
// webhook, filtered by events, packageId and space, never twice).
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { finalizeRun } from '../../db/run-finalization.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, aSpace, type BuiltOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';

let app: TestApp;
let org: BuiltOrg;
let s2: string;
let ownerKey: string;
const hook = (over: Record<string, unknown> = {}) => ({ level: 'space', spaceId: org.spaceId, url: 'https://hooks.example.test/in', events: ['run.success'], ...over });

before(async () => {
  app = await startTestApp({ env: { EGRESS_ALLOW_INTERNAL_HOSTS: '127.0.0.1:4567' } });
  org = await anOrg(app.deps.database.pool);
  s2 = await aSpace(app.deps.database.pool, org.orgId, { name: 'Second' });
  ownerKey = (await aKey(app.deps.database.pool, { ...org, userId: org.ownerId })).key;
});
after(() => app.close());

const asOwner = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(app.url, method, path, { key: ownerKey, body, headers });
const ids = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((w) => w.id).sort();

describe('webhook records', () => {
  // each test its own key, so the creations of one do not spend another's rate-limit bucket
  beforeEach(async () => {
    ownerKey = (await aKey(app.deps.database.pool, { ...org, userId: org.ownerId })).key;
  });

  test('create answers the record and its whsec_ secret once; reads never show it; it is sealed at rest', async () => {
    const res = await asOwner('POST', '/api/webhooks', hook({ events: ['run.success', 'run.failed'], payloadMode: 'full', packageId: '@acme/bot' }));
    assert.equal(res.status, 201, res.text);
    const { secret, ...record } = res.body;
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.match(record.id, /^wh_/);
    assert.equal(res.headers.get('location'), `/api/webhooks/${record.id}`);
    assert.deepEqual(Object.keys(record).sort(), ['createdAt', 'enabled', 'events', 'id', 'level', 'object', 'packageId', 'payloadMode', 'spaceId', 'updatedAt', 'url']);
    assert.deepEqual({ ...record, createdAt: 0, updatedAt: 0 }, {
      id: record.id, object: 'webhook', level: 'space', spaceId: org.spaceId, url: 'https://hooks.example.test/in',
      events: ['run.success', 'run.failed'], packageId: '@acme/bot', payloadMode: 'full', enabled: true, createdAt: 0, updatedAt: 0,
    });
    const read = await asOwner('GET', `/api/webhooks/${record.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, record);
    assert.ok(!(await asOwner('GET', `/api/webhooks?spaceId=${org.spaceId}`)).text.includes(secret.slice(6)));
    const { rows } = await app.deps.database.pool.query('SELECT row_to_json(w)::text AS t, secret_sealed FROM webhooks w WHERE id = $1', [record.id]);
    assert.ok(!rows[0].t.includes(secret.slice(6)), 'the secret is not stored in clear');
    assert.equal(app.deps.secrets.open(rows[0].secret_sealed), secret);
  });

  test('an organization-level webhook has no spaceId; level and spaceId must agree', async () => {
    const res = await asOwner('POST', '/api/webhooks', { level: 'org', url: 'https://hooks.example.test/org', events: ['run.timeout'] });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.level, 'org');
    assert.equal('spaceId' in res.body, false);
    assert.equal(res.body.payloadMode, 'summary');
    assert.equal(res.body.packageId, null);
    const noSpace = await asOwner('POST', '/api/webhooks', { level: 'space', url: 'https://hooks.example.test/', events: ['run.success'] });
    assert.equal(noSpace.status, 400);
    assert.equal(noSpace.body.code, 'validation_failed');
    assert.equal(noSpace.body.errors[0].field, 'spaceId');
    const both = await asOwner('POST', '/api/webhooks', { level: 'org', spaceId: org.spaceId, url: 'https://hooks.example.test/', events: ['run.success'] });
    assert.equal(both.status, 400);
    assert.equal(both.body.errors[0].field, 'spaceId');
  });

  test('unknown events, modes and fields are refused with validation_failed', async () => {
    for (const body of [hook({ events: ['run.exploded'] }), hook({ events: [] }), hook({ payloadMode: 'everything' }), hook({ secret: 'mine' }), hook({ url: 'not a url' }), hook({ url: 'ftp://hooks.example.test/' })]) {
      const res = await asOwner('POST', '/api/webhooks', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.code, 'validation_failed', `${JSON.stringify(body)}: ${res.text}`);
    }
  });

  test('private and reserved targets are refused with blocked_url unless EGRESS_ALLOW_INTERNAL_HOSTS names host:port', async () => {
    for (const url of ['http://127.0.0.1:4568/hook', 'http://10.1.2.3/hook', 'http://localhost:4567/hook', 'http://[::1]:4567/', 'http://169.254.169.254/latest']) {
      const res = await asOwner('POST', '/api/webhooks', hook({ url }));
      assert.equal(res.status, 400, url);
      assert.equal(res.body.code, 'blocked_url', `${url}: ${res.text}`);
    }
    const allowed = await asOwner('POST', '/api/webhooks', hook({ url: 'http://127.0.0.1:4567/hook' }));
    assert.equal(allowed.status, 201, allowed.text);
    const moved = await asOwner('PATCH', `/api/webhooks/${allowed.body.id}`, { url: 'http://127.0.0.1:5432/' });
    assert.equal(moved.status, 400);
    assert.equal(moved.body.code, 'blocked_url');
  });

  test('Idempotency-Key on create replays the first answer and creates one webhook', async () => {
    const headers = { 'idempotency-key': `create-${org.orgId}` };
    const body = hook({ url: 'https://hooks.example.test/idem' });
    const first = await asOwner('POST', '/api/webhooks', body, headers);
    const again = await asOwner('POST', '/api/webhooks', body, headers);
    assert.equal(first.status, 201);
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    const { rows } = await app.deps.database.pool.query(`SELECT count(*)::int AS n FROM webhooks WHERE org_id = $1 AND url = 'https://hooks.example.test/idem'`, [org.orgId]);
    assert.equal(rows[0].n, 1);
    const other = await asOwner('POST', '/api/webhooks', { ...body, events: ['run.failed'] }, headers);
    assert.equal(other.status, 422);
    assert.equal(other.body.code, 'idempotency_conflict');
    const rotate = await asOwner('POST', `/api/webhooks/${first.body.id}/rotate`, undefined, headers);
    assert.equal(rotate.status, 400);
    assert.equal(rotate.body.code, 'idempotency_not_supported');
  });

  test('update changes what is given; enabled: true turns a disabled webhook back on; delete removes it', async () => {
    const created = await asOwner('POST', '/api/webhooks', hook());
    const id = created.body.id;
    const off = await asOwner('PATCH', `/api/webhooks/${id}`, { enabled: false, events: ['run.started', 'run.cancelled'], packageId: '@acme/other' });
    assert.equal(off.status, 200, off.text);
    assert.deepEqual([off.body.enabled, off.body.events, off.body.packageId, off.body.url], [false, ['run.started', 'run.cancelled'], '@acme/other', created.body.url]);
    const on = await asOwner('PATCH', `/api/webhooks/${id}`, { enabled: true, packageId: null });
    assert.deepEqual([on.body.enabled, on.body.packageId], [true, null]);
    assert.equal((await asOwner('DELETE', `/api/webhooks/${id}`)).status, 204);
    assert.equal((await asOwner('GET', `/api/webhooks/${id}`)).status, 404);
    assert.equal((await asOwner('DELETE', `/api/webhooks/${id}`)).status, 404);
  });

  test('rotation answers a new secret and keeps the previous one signing for 24 hours; 5 a minute', async () => {
    const created = await asOwner('POST', '/api/webhooks', hook());
    const rotated = await asOwner('POST', `/api/webhooks/${created.body.id}/rotate`);
    assert.equal(rotated.status, 200, rotated.text);
    assert.match(rotated.body.secret, /^whsec_/);
    assert.notEqual(rotated.body.secret, created.body.secret);
    assert.equal(rotated.headers.get('ratelimit-policy'), '5;w=60');
    const { rows } = await app.deps.database.pool.query(
      `SELECT secret_sealed, previous_secret_sealed, round(extract(epoch FROM previous_secret_expires_at - now()) / 3600) AS hours FROM webhooks WHERE id = $1`, [created.body.id]);
    assert.equal(app.deps.secrets.open(rows[0].secret_sealed), rotated.body.secret);
    assert.equal(app.deps.secrets.open(rows[0].previous_secret_sealed), created.body.secret);
    assert.equal(Number(rows[0].hours), 24);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await asOwner('POST', `/api/webhooks/${created.body.id}/rotate`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 429]);
  });

  test('the rate-limit rows: 10 a minute for writes, 300 for reads', async () => {
    const created = await asOwner('POST', '/api/webhooks', hook());
    assert.equal(created.headers.get('ratelimit-policy'), '10;w=60');
    for (const path of [`/api/webhooks/${created.body.id}`, '/api/webhooks', `/api/webhooks/${created.body.id}/deliveries`]) {
      assert.equal((await asOwner('GET', path)).headers.get('ratelimit-policy'), '300;w=60', path);
    }
    assert.equal((await asOwner('PATCH', `/api/webhooks/${created.body.id}`, { enabled: true })).headers.get('ratelimit-policy'), '10;w=60');
    // a member's own bucket: ten creations pass, the eleventh is refused
    const member = await aMember(app.deps.database.pool, org.orgId, 'member', { spaceId: s2, roleKey: 'editor' });
    const { key } = await aKey(app.deps.database.pool, { orgId: org.orgId, spaceId: s2, userId: member });
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await call(app.url, 'POST', '/api/webhooks', { key, body: hook({ spaceId: s2 }) })).status);
    assert.deepEqual(statuses, [...Array(10).fill(201), 429]);
  });
});

describe('who sees and changes which webhook', () => {
  let orgHook: string;
  let s1Hook: string;
  let s2Hook: string;
  let o: BuiltOrg;
  let space2: string;
  let ownerK: string;

  before(async () => {
    const pool = app.deps.database.pool;
    o = await anOrg(pool);
    space2 = await aSpace(pool, o.orgId, { name: 'Two' });
    ownerK = (await aKey(pool, { ...o, userId: o.ownerId })).key;
    const cookie = (await aSession(pool, o.ownerId)).cookie;
    const make = async (body: Record<string, unknown>) => (await call(app.url, 'POST', '/api/webhooks', { cookie, org: o.orgId, body: { url: 'https://hooks.example.test/v', events: ['run.success'], ...body } })).body.id as string;
    orgHook = await make({ level: 'org' });
    s1Hook = await make({ level: 'space', spaceId: o.spaceId });
    s2Hook = await make({ level: 'space', spaceId: space2 });
  });

  test("the owner: org-level rows by default, a space's rows added with spaceId, every row with all=true (which overrides spaceId)", async () => {
    const cookie = (await aSession(app.deps.database.pool, o.ownerId)).cookie;
    const list = (q: string) => call(app.url, 'GET', `/api/webhooks${q}`, { cookie, org: o.orgId });
    assert.deepEqual(ids(await list('')), [orgHook]);
    assert.deepEqual(ids(await list(`?spaceId=${o.spaceId}`)), [orgHook, s1Hook].sort());
    assert.deepEqual(ids(await list(`?spaceId=${space2}`)), [orgHook, s2Hook].sort());
    assert.deepEqual(ids(await list(`?all=true&spaceId=${o.spaceId}`)), [orgHook, s1Hook, s2Hook].sort());
    const paged = await list('?all=true&limit=2');
    assert.equal(paged.body.data.length, 2);
    assert.equal(paged.body.hasMore, true);
    const rest = await list(`?all=true&limit=2&startingAfter=${paged.body.data[1].id}`);
    assert.deepEqual([...paged.body.data, ...rest.body.data].map((w: { id: string }) => w.id).sort(), [orgHook, s1Hook, s2Hook].sort());
  });

  // issue 29, check (a): the lookup behind every /api/webhooks/{id} operation filters on the caller's organization
  test("another organization's owner, with every webhook permission there, reaches none of this one's organization-level webhook: 404 on read, update, delete, rotate and deliveries", async () => {
    const pool = app.deps.database.pool;
    const other = await anOrg(pool);
    const before = (await pool.query('SELECT url, secret_sealed, updated_at FROM webhooks WHERE id = $1', [orgHook])).rows[0];
    const callers = [
      { cookie: (await aSession(pool, other.ownerId)).cookie, org: other.orgId },
      { key: (await aKey(pool, { ...other, userId: other.ownerId })).key },
    ];
    for (const who of callers) {
      const as = (method: string, path: string, body?: unknown) => call(app.url, method, path, { ...who, body });
      assert.equal((await as('GET', '/api/webhooks')).status, 200, 'the caller may list its own webhooks');
      for (const [method, path, body] of [
        ['GET', `/api/webhooks/${orgHook}`], ['PATCH', `/api/webhooks/${orgHook}`, { url: 'https://attacker.example.test/in' }],
        ['POST', `/api/webhooks/${orgHook}/rotate`], ['GET', `/api/webhooks/${orgHook}/deliveries`], ['DELETE', `/api/webhooks/${orgHook}`],
      ] as const) {
        const res = await as(method, path, body);
        assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
        assert.equal(res.body.code, 'not_found');
      }
    }
    const after = (await pool.query('SELECT url, secret_sealed, updated_at FROM webhooks WHERE id = $1', [orgHook])).rows[0];
    assert.deepEqual(after, before, 'nothing changed');
    assert.equal((await call(app.url, 'GET', `/api/webhooks/${orgHook}`, { key: ownerK })).status, 200, 'its own organization still reads it');
  });

  test('a member with webhooks:read in one space gets a shorter page, never 403, and no org-level rows', async () => {
    const pool = app.deps.database.pool;
    const editor = await aMember(pool, o.orgId, 'member', { spaceId: o.spaceId, roleKey: 'editor' });
    const cookie = (await aSession(pool, editor)).cookie;
    const as = (method: string, path: string, body?: unknown) => call(app.url, method, path, { cookie, org: o.orgId, body });
    const none = await as('GET', '/api/webhooks');
    assert.equal(none.status, 200);
    assert.deepEqual(none.body.data, []);
    assert.deepEqual(ids(await as('GET', `/api/webhooks?spaceId=${o.spaceId}`)), [s1Hook]);
    assert.deepEqual(ids(await as('GET', `/api/webhooks?spaceId=${space2}`)), [], 'a space without a role adds nothing');
    const all = await as('GET', '/api/webhooks?all=true');
    assert.equal(all.status, 403);
    assert.equal(all.body.code, 'forbidden');
    assert.equal((await as('GET', `/api/webhooks/${s1Hook}`)).status, 200);
    assert.equal((await as('GET', `/api/webhooks/${s1Hook}/deliveries`)).status, 200);
    assert.equal((await as('GET', `/api/webhooks/${orgHook}`)).status, 404);
    assert.equal((await as('GET', `/api/webhooks/${s2Hook}`)).status, 404);
    assert.equal((await as('PATCH', `/api/webhooks/${s2Hook}`, { enabled: false })).status, 404);
    // an editor writes but does not delete
    const created = await as('POST', '/api/webhooks', { level: 'space', spaceId: o.spaceId, url: 'https://hooks.example.test/e', events: ['run.failed'] });
    assert.equal(created.status, 201, created.text);
    assert.equal((await as('PATCH', `/api/webhooks/${s1Hook}`, { enabled: true })).status, 200);
    assert.equal((await as('POST', `/api/webhooks/${s1Hook}/rotate`)).status, 200);
    const del = await as('DELETE', `/api/webhooks/${s1Hook}`);
    assert.equal(del.status, 403);
    assert.equal(del.body.code, 'forbidden');
    assert.equal((await call(app.url, 'DELETE', `/api/webhooks/${created.body.id}`, { key: ownerK })).status, 204);
    const orgLevel = await as('POST', '/api/webhooks', { level: 'org', url: 'https://hooks.example.test/e', events: ['run.failed'] });
    assert.equal(orgLevel.status, 403);
    const elsewhere = await as('POST', '/api/webhooks', { level: 'space', spaceId: space2, url: 'https://hooks.example.test/e', events: ['run.failed'] });
    assert.equal(elsewhere.status, 404);
  });

  test('a viewer reads its space\'s webhooks and changes none', async () => {
    const pool = app.deps.database.pool;
    const viewer = await aMember(pool, o.orgId, 'member', { spaceId: o.spaceId, roleKey: 'viewer' });
    const cookie = (await aSession(pool, viewer)).cookie;
    const as = (method: string, path: string, body?: unknown) => call(app.url, method, path, { cookie, org: o.orgId, body });
    assert.equal((await as('GET', `/api/webhooks/${s1Hook}`)).status, 200);
    for (const [method, path, body] of [
      ['POST', '/api/webhooks', { level: 'space', spaceId: o.spaceId, url: 'https://hooks.example.test/v2', events: ['run.failed'] }],
      ['PATCH', `/api/webhooks/${s1Hook}`, { enabled: false }],
      ['POST', `/api/webhooks/${s1Hook}/rotate`, undefined],
      ['DELETE', `/api/webhooks/${s1Hook}`, undefined],
    ] as const) {
      const res = await as(method, path, body);
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.equal(res.body.code, 'forbidden');
    }
  });

  test('keys: webhooks:read reveals their space\'s rows, org-webhooks:read the org-level rows, and a key never reaches another space', async () => {
    const pool = app.deps.database.pool;
    const spaceReader = (await aKey(pool, { ...o, userId: o.ownerId, scopes: ['webhooks:read'] })).key;
    const orgReader = (await aKey(pool, { ...o, userId: o.ownerId, scopes: ['org-webhooks:read'] })).key;
    const list = (key: string, q = '') => call(app.url, 'GET', `/api/webhooks${q}`, { key });
    assert.deepEqual(ids(await list(spaceReader)), []);
    assert.deepEqual(ids(await list(spaceReader, `?spaceId=${o.spaceId}`)), [s1Hook]);
    const elsewhere = await list(spaceReader, `?spaceId=${space2}`);
    assert.equal(elsewhere.status, 403, 'the query names a space the key is not pinned to');
    assert.equal(elsewhere.body.param, 'spaceId');
    assert.equal((await list(spaceReader, '?all=true')).status, 403);
    assert.deepEqual(ids(await list(orgReader)), [orgHook]);
    assert.deepEqual(ids(await list(orgReader, `?spaceId=${o.spaceId}`)), [orgHook]);
    assert.equal((await call(app.url, 'GET', `/api/webhooks/${s2Hook}`, { key: ownerK })).status, 404, "the owner's key pinned to s1 does not reach s2's webhook");
    assert.equal((await call(app.url, 'PATCH', `/api/webhooks/${orgHook}`, { key: orgReader, body: { enabled: true } })).status, 403, 'org-level writes need webhooks:write too');
    assert.equal((await call(app.url, 'GET', `/api/webhooks/${orgHook}`, { key: spaceReader })).status, 404);
  });

  test('an organization member without an organization role over webhooks sees no org-level row, even with all spaces\' roles', async () => {
    const pool = app.deps.database.pool;
    const admin = await aMember(pool, o.orgId, 'member', { spaceId: o.spaceId, roleKey: 'space_admin' });
    const cookie = (await aSession(pool, admin)).cookie;
    assert.equal((await call(app.url, 'GET', `/api/webhooks/${orgHook}`, { cookie, org: o.orgId })).status, 404);
    assert.equal((await call(app.url, 'DELETE', `/api/webhooks/${orgHook}`, { cookie, org: o.orgId })).status, 404);
    const adminKey = (await aKey(pool, { ...o, userId: admin })).key;
    assert.equal((await call(app.url, 'POST', '/api/webhooks', { key: adminKey, body: { level: 'org', url: 'https://hooks.example.test/o', events: ['run.failed'] } })).status, 403);
  });
});

describe('what a run status change writes', () => {
  test('one delivery per matching enabled webhook, filtered by event, package and space; a change is never written twice', async () => {
    const pool = app.deps.database.pool;
    const o = await anOrg(pool);
    const other = await aSpace(pool, o.orgId, { name: 'Other' });
    const key = (await aKey(pool, { ...o, userId: o.ownerId })).key;
    const make = async (body: Record<string, unknown>) => (await call(app.url, 'POST', '/api/webhooks', { key, body: { url: 'https://hooks.example.test/r', ...body } })).body.id as string;
    const all = await make({ level: 'org', events: ['run.started', 'run.success', 'run.failed', 'run.timeout', 'run.cancelled'], payloadMode: 'full' });
    const successHere = await make({ level: 'space', spaceId: o.spaceId, events: ['run.success'] });
    const otherPackage = await make({ level: 'space', spaceId: o.spaceId, events: ['run.success'], packageId: '@acme/other' });
    const otherSpace = await make({ level: 'space', spaceId: other, events: ['run.success'] });
    const disabled = await make({ level: 'space', spaceId: o.spaceId, events: ['run.success'] });
    await call(app.url, 'PATCH', `/api/webhooks/${disabled}`, { key, body: { enabled: false } });

    const runId = `run_wh${o.orgId.slice(0, 8)}`;
    await pool.query(
      `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at)
       VALUES ($1, $2, $3, '@acme/bot', '1.0.0', 'pending', 'member', $4, 60, $5, now() + interval '1 hour')`,
      [runId, o.orgId, o.spaceId, o.ownerId, app.deps.secrets.seal(newRunEventSecret())],
    );
    await pool.query(`UPDATE runs SET status = 'running', started_at = now() WHERE id = $1`, [runId]);
    assert.deepEqual(await finalizeRun(pool, runId, { status: 'success', output: { answer: 42 } }), { finalized: true });
    assert.deepEqual(await finalizeRun(pool, runId, { status: 'failed', error: { code: 'late', message: 'too late' } }), { finalized: false });

    const { rows } = await pool.query(`SELECT webhook_id, event, payload FROM webhook_deliveries WHERE run_id = $1 ORDER BY webhook_id, event`, [runId]);
    const got = rows.map((r) => `${r.webhook_id} ${r.event}`).sort();
    assert.deepEqual(got, [`${all} run.started`, `${all} run.success`, `${successHere} run.success`].sort());
    const org2 = rows.filter((r) => r.webhook_id !== all && r.webhook_id !== successHere);
    assert.deepEqual(org2, [], `${otherPackage}, ${otherSpace} and ${disabled} get nothing`);
    const full = rows.find((r) => r.webhook_id === all && r.event === 'run.success')!.payload;
    assert.equal(full.type, 'run.success');
    assert.deepEqual(full.data.result, { output: { answer: 42 } });
    const own = await call(app.url, 'GET', `/api/runs/${runId}`, { key });
    assert.deepEqual(full.data, own.body, 'full mode carries the run as GET /api/runs/{id} shows it');
    const summary = rows.find((r) => r.webhook_id === successHere)!.payload.data;
    assert.deepEqual(Object.keys(summary).sort(), ['createdAt', 'duration_ms', 'finished_at', 'id', 'object', 'packageId', 'spaceId', 'started_at', 'status']);
    assert.equal(summary.status, 'success');

    const told = await pool.query(`SELECT kind, user_id, subject FROM notifications WHERE org_id = $1`, [o.orgId]);
    assert.deepEqual(told.rows, [{ kind: 'run_ended', user_id: o.ownerId, subject: { run_id: runId, package_id: '@acme/bot' } }], 'one notification, to the launcher');
  });
});
