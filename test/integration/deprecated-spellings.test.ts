// The camelCase request-body spellings of the deprecation period (docs/integrators.md: Deprecated spellings):
// still accepted where a body used to take them, answered with the snake_case name only; a body
// naming one field both ways is refused rather than guessed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEPRECATED_BODY_SPELLINGS, withCurrentSpellings } from '../../api/deprecated-spellings.ts';
import { CURRENT_API_VERSION } from '../../api/middleware/api-version.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, type BuiltOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';

describe('withCurrentSpellings', () => {
  test('renames the old top-level spellings, leaves everything else and the input as they were', () => {
    const input = { roleKey: 'viewer', userId: 'usr_1', nested: { mimeType: 'text/plain' } };
    assert.deepEqual(withCurrentSpellings(input), { userId: 'usr_1', nested: { mimeType: 'text/plain' }, role_key: 'viewer' });
    assert.deepEqual(input, { roleKey: 'viewer', userId: 'usr_1', nested: { mimeType: 'text/plain' } });
    for (const other of [null, [{ roleKey: 'x' }], 'roleKey', 3]) assert.deepEqual(withCurrentSpellings(other), other);
  });

  test('a body naming a field both ways is left for validation to refuse', () => {
    const both = { mimeType: 'text/plain', mime_type: 'text/csv' };
    assert.equal(withCurrentSpellings(both), both);
  });

  test('every old spelling maps to a snake_case name', () => {
    for (const [old, current] of Object.entries(DEPRECATED_BODY_SPELLINGS)) {
      assert.match(old, /[A-Z]/);
      assert.match(current, /^[a-z]+(_[a-z]+)+$/);
    }
  });
});

describe('the old spellings over HTTP', () => {
  let app: TestApp;
  let org: BuiltOrg;
  let owner: string;
  before(async () => {
    app = await startTestApp();
    org = await anOrg(app.deps.database.pool);
    owner = (await aSession(app.deps.database.pool, org.ownerId)).cookie;
  });
  after(() => app?.close());

  test('PATCH /api/orgs/{orgId} takes apiVersion and answers api_version only', async () => {
    const res = await call(app.url, 'PATCH', `/api/orgs/${org.orgId}`, { cookie: owner, body: { apiVersion: CURRENT_API_VERSION } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.api_version, CURRENT_API_VERSION);
    assert.equal('apiVersion' in res.body, false);
    assert.equal('defaultSpaceId' in res.body, false);
  });

  test('a space role is changed with roleKey, answered as role_key and org_role', async () => {
    const member = await aMember(app.deps.database.pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'editor' });
    const res = await call(app.url, 'PATCH', `/api/spaces/${org.spaceId}/members/${member}`, { cookie: owner, org: org.orgId, body: { roleKey: 'viewer' } });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual([res.body.role_key, res.body.org_role, 'roleKey' in res.body, 'orgRole' in res.body], ['viewer', 'member', false, false]);
  });

  test('POST /api/uploads takes mimeType and answers mime_type and upload_url', async () => {
    const { key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId });
    const res = await call(app.url, 'POST', '/api/uploads', { key, body: { name: 'a.txt', size: 1, mimeType: 'text/plain' } });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.mime_type, 'text/plain');
    assert.match(res.body.upload_url, /\/api\/uploads\/_content\?token=/);
    assert.equal(Object.keys(res.body).some((k) => /[A-Z]/.test(k) && k !== 'expiresAt'), false, res.text);
  });

  test('both spellings of one field: 400 validation_failed, the old one an unknown field', async () => {
    const res = await call(app.url, 'PATCH', `/api/orgs/${org.orgId}`, { cookie: owner, body: { apiVersion: CURRENT_API_VERSION, api_version: null } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_failed');
    assert.deepEqual(res.body.errors.map((e: { field: string; code: string }) => [e.field, e.code]), [['apiVersion', 'unknown_field']]);
  });
});
