// Key creation is rate limited per user, so per-key limits cannot be sidestepped by minting keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { API_KEY_CREATIONS_PER_MINUTE } from '../../api/routes/api-keys.ts';
import { useTestApp } from '../support/app.ts';
import { anOrg } from '../support/builders.ts';

const { pool, api, sessionOf } = useTestApp();

test('a user creating keys past the per-minute limit gets 429 rate_limited with the rate limit headers', async () => {
  const org = await anOrg(pool());
  const ctx = { cookie: await sessionOf(org.ownerId), org: org.orgId, space: org.spaceId };
  for (let i = 0; i < API_KEY_CREATIONS_PER_MINUTE; i++) {
    const made = await api().post('/api/api-keys', { name: `key ${i}` }, ctx);
    assert.equal(made.status, 201, made.text);
    assert.equal(made.headers.get('ratelimit-policy'), `${API_KEY_CREATIONS_PER_MINUTE};w=60`);
  }
  const refused = await api().post('/api/api-keys', { name: 'one too many' }, ctx);
  assert.equal(refused.status, 429, refused.text);
  assert.equal(refused.body.code, 'rate_limited');
  assert.equal(refused.headers.get('ratelimit-policy'), `${API_KEY_CREATIONS_PER_MINUTE};w=60`);
  assert.match(refused.headers.get('ratelimit') ?? '', /^limit=10, remaining=0, reset=\d+$/);
  assert.ok(Number(refused.headers.get('retry-after')) > 0, 'Retry-After says when to come back');
  const { rows } = await pool().query('SELECT count(*)::int AS n FROM api_keys WHERE space_id = $1', [org.spaceId]);
  assert.equal(rows[0].n, API_KEY_CREATIONS_PER_MINUTE, 'the refused call minted nothing');

  // the bucket is the caller's: another user still creates keys
  const other = await anOrg(pool());
  const theirs = await api().post('/api/api-keys', { name: 'theirs' }, { cookie: await sessionOf(other.ownerId), org: other.orgId, space: other.spaceId });
  assert.equal(theirs.status, 201, theirs.text);
});
