// An integrator's end-users, end to end with openid-client (an independent relying party): the
// integrator registers a space client (public, PKCE, sign-ups allowed) through the API; an
// end-user signs in through the authorization code flow, launches an agent with the access token,
// sees only their own runs, follows their run on the realtime stream until it ends, and gets 404
// on another end-user's run (and on that run's stream).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { aRunWorld, endEchoRun, type RunWorld } from '../support/runs.ts';
import { aSession, aUserWithPassword } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { listen } from '../support/sse.ts';
import * as oidc from 'openid-client';
import { codeFlow, jwtParts, REDIRECT, relyingParty, type Person } from '../integration/oidc-harness.ts';

const ECHO = '/api/agents/@fixtures/agent-echo/run';
let world: RunWorld;
let clientId: string;

before(async () => {
  world = await aRunWorld();
  const pool = world.app.deps.database.pool;
  const owner = (await aSession(pool, world.org.ownerId)).cookie;
  const created = await call(world.app.url, 'POST', '/api/oauth/clients', {
    cookie: owner, org: world.org.orgId, space: world.org.spaceId,
    body: {
      level: 'space', name: 'Customer portal', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'none', scopes: ['openid', 'offline_access', 'agents:read', 'agents:run', 'runs:read', 'runs:cancel', 'files:read'], allowSignup: true,
    },
  });
  assert.equal(created.status, 201, created.text);
  clientId = created.body.id;
});
after(() => world.close());

async function signIn(who: Person, scope = 'openid agents:read agents:run runs:read'): Promise<string> {
  const rp = await relyingParty(world.app.url, clientId);
  const flow = await codeFlow(rp, who, { scope });
  assert.ok(flow.tokens, flow.browser.lastPage()?.html);
  const claims = jwtParts(flow.tokens.access_token).payload;
  assert.equal(claims.lvl, 'space');
  assert.equal(claims.spc, world.org.spaceId);
  assert.match(claims.sub, /^eu_/);
  if (scope.includes('offline_access')) refreshTokens.set(flow.tokens.access_token, flow.tokens.refresh_token!);
  return flow.tokens.access_token;
}
const refreshTokens = new Map<string, string>();

test('an end-user signs in, launches an agent, sees and follows only their own runs', async () => {
  const pool = world.app.deps.database.pool;
  const alice = await aUserWithPassword(pool);
  const bob = await aUserWithPassword(pool);
  const aliceToken = await signIn(alice);
  const bobToken = await signIn(bob);
  const aliceId = jwtParts(aliceToken).payload.sub;

  const as = (token: string, method: string, path: string, body?: unknown) => call(world.app.url, method, path, { key: token, body });
  const launched = await as(aliceToken, 'POST', ECHO, { input: { message: 'from the portal' } });
  assert.equal(launched.status, 201, launched.text);
  assert.equal(launched.body.triggered_by.kind, 'end_user');
  const aliceRun = launched.body.id;
  const bobRun = (await as(bobToken, 'POST', ECHO, { input: { message: 'mine' } })).body.id;
  assert.match(bobRun, /^run_/);
  // a member's run in the same space, launched with the integrator's key
  const memberRun = (await call(world.app.url, 'POST', ECHO, { key: world.key, body: { input: { message: 'staff' } } })).body.id;
  assert.match(memberRun, /^run_/);

  const list = await as(aliceToken, 'GET', '/api/runs');
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(list.body.data.map((r: { id: string }) => r.id), [aliceRun]);
  assert.equal((await as(aliceToken, 'GET', `/api/runs/${aliceRun}`)).status, 200);
  for (const other of [bobRun, memberRun]) {
    const read = await as(aliceToken, 'GET', `/api/runs/${other}`);
    assert.equal(read.status, 404, read.text);
  }
  const otherStream = await fetch(`${world.app.url}/api/realtime/runs/${bobRun}`, { headers: { authorization: `Bearer ${aliceToken}` } });
  assert.equal(otherStream.status, 404);
  await otherStream.body?.cancel();

  // the stream of her own run: a snapshot, then the run's end
  const stream = listen(`${world.app.url}/api/realtime/runs/${aliceRun}`, { authorization: `Bearer ${aliceToken}` });
  try {
    await stream.count('run_update', 1);
    await endEchoRun(world.app, aliceRun, { echo: 'from the portal' });
    const frames = await stream.until((f) => f.some((x) => x.event === 'run_update' && x.data?.status === 'success'), 'the run to end');
    assert.ok(frames.every((f) => f.event !== 'run_update' || f.data?.id === aliceRun));
  } finally {
    stream.close();
  }
  // files: only those of her own runs (a file each run published, and one a member uploaded)
  const aFile = async (runId: string | null) => {
    const id = `file_${Math.random().toString(36).slice(2, 12)}`;
    await pool.query(
      `INSERT INTO files (id, org_id, space_id, name, size, mime_type, sha256, storage_key, source, run_id) VALUES ($1, $2, $3, 'out.txt', 1, 'text/plain', $4, $1, $5, $6)`,
      [id, world.org.orgId, world.org.spaceId, 'a'.repeat(64), runId ? 'run' : 'upload', runId],
    );
    if (runId) await pool.query(`INSERT INTO run_files (run_id, file_id, org_id, space_id, role, name) VALUES ($1, $2, $3, $4, 'output', 'out.txt')`, [runId, id, world.org.orgId, world.org.spaceId]);
    return id;
  };
  const fileToken = await signIn(alice, 'openid files:read runs:read');
  const hers = await aFile(aliceRun);
  const bobs = await aFile(bobRun);
  const uploaded = await aFile(null);
  const files = await as(fileToken, 'GET', '/api/files');
  assert.equal(files.status, 200, files.text);
  assert.deepEqual(files.body.data.map((f: { id: string }) => f.id), [hers]);
  assert.equal((await as(fileToken, 'GET', `/api/files/${hers}`)).status, 200);
  for (const id of [bobs, uploaded]) assert.equal((await as(fileToken, 'GET', `/api/files/${id}`)).status, 404);
  // a member with files:read still reads every file of the space
  const member = await call(world.app.url, 'GET', '/api/files', { key: world.key });
  assert.deepEqual(new Set(member.body.data.map((f: { id: string }) => f.id)), new Set([hers, bobs, uploaded]));

  // what the token was not granted, and what no end-user token reaches
  assert.equal((await as(aliceToken, 'POST', `/api/runs/${bobRun}/cancel`)).status, 403);
  assert.equal((await as(aliceToken, 'GET', '/api/end-users')).status, 403);
  assert.equal((await as(aliceToken, 'GET', '/api/api-keys')).status, 403);
  const row = await pool.query('SELECT end_user_id, space_id FROM runs WHERE id = $1', [aliceRun]);
  assert.deepEqual(row.rows[0], { end_user_id: aliceId, space_id: world.org.spaceId });
});

test('revoking the grant ends the end-user\'s token and closes the stream it opened', async () => {
  const pool = world.app.deps.database.pool;
  const carol = await aUserWithPassword(pool);
  const token = await signIn(carol, 'openid offline_access agents:run runs:read');
  const run = (await call(world.app.url, 'POST', ECHO, { key: token, body: { input: { message: 'x' } } })).body.id;
  assert.match(run, /^run_/);
  const stream = listen(`${world.app.url}/api/realtime/runs/${run}`, { authorization: `Bearer ${token}` });
  try {
    await stream.count('run_update', 1);
    const rp = await relyingParty(world.app.url, clientId);
    await oidc.tokenRevocation(rp, refreshTokens.get(token)!);
    assert.equal((await call(world.app.url, 'GET', '/api/runs', { key: token })).status, 401);
    // the open stream is re-checked on the identity change and refused from then on
    await stream.until(() => stream.refusedWith !== null, 'the stream to be refused', 10_000);
    assert.equal(stream.refusedWith, 401);
  } finally {
    stream.close();
  }
});

test('the person changing their password ends what they obtained as an end-user (access and refresh token)', async () => {
  const pool = world.app.deps.database.pool;
  const dora = await aUserWithPassword(pool);
  const token = await signIn(dora, 'openid offline_access agents:read runs:read');
  assert.equal((await call(world.app.url, 'GET', '/api/runs', { key: token })).status, 200);
  const signedIn = await call(world.app.url, 'POST', '/api/auth/sign-in/email', { body: { email: dora.email, password: dora.password } });
  assert.equal(signedIn.status, 200, signedIn.text);
  const cookie = signedIn.headers.get('set-cookie')!.split(';')[0];
  const changed = await call(world.app.url, 'POST', '/api/auth/change-password', { cookie, body: { current_password: dora.password, new_password: 'another long password 42' } });
  assert.equal(changed.status, 204, changed.text);
  assert.equal((await call(world.app.url, 'GET', '/api/runs', { key: token })).status, 401);
  const rp = await relyingParty(world.app.url, clientId);
  await assert.rejects(oidc.refreshTokenGrant(rp, refreshTokens.get(token)!), (err: any) => err?.error === 'invalid_grant');
});
