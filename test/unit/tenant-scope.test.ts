// A tenant scope is built from an authenticated request's context only: no principal, no
// organization or no space is a programming error that must stop the request (the route pipeline
// answers 500 for it), never a scope with a missing filter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import type { Db } from '../../db/client.ts';
import { orgScopeOf, spaceScopeOf } from '../../db/tenant.ts';

const database = { pool: {} as pg.Pool, db: {} as Db };
const principal = { userId: 'usr_1', apiKeyId: 'key_1' };

test('an organization scope carries the pool, the organization and the actor', () => {
  const scope = orgScopeOf({ principal, org: { id: 'org_1' }, endUserId: 'eu_1' }, database);
  assert.equal(scope.pool, database.pool);
  assert.equal(scope.db, database.db);
  assert.equal(scope.orgId, 'org_1');
  assert.deepEqual(scope.actor, { userId: 'usr_1', apiKeyId: 'key_1', endUserId: 'eu_1' });
});

test('a space scope adds the space to the organization scope', () => {
  const scope = spaceScopeOf({ principal: { userId: 'usr_2' }, org: { id: 'org_2' }, space: { id: 'spc_2' } }, database);
  assert.equal(scope.orgId, 'org_2');
  assert.equal(scope.spaceId, 'spc_2');
  assert.equal(scope.pool, database.pool);
  assert.deepEqual(scope.actor, { userId: 'usr_2', apiKeyId: undefined, endUserId: undefined });
});

test('no principal, no organization or no space: no scope', () => {
  assert.throws(() => orgScopeOf({ org: { id: 'org_1' } }, database), /^Error: scope requested for an unauthenticated request$/);
  assert.throws(() => orgScopeOf({ principal }, database), /^Error: org scope requested on a route without organization context$/);
  assert.throws(() => spaceScopeOf({ principal, org: { id: 'org_1' } }, database), /^Error: space scope requested on a route without space context$/);
  assert.throws(() => spaceScopeOf({ org: { id: 'org_1' }, space: { id: 'spc_1' } }, database), /unauthenticated/);
});
