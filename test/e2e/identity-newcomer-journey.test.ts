// A newcomer's first minutes against a really started platform process: redeem the bootstrap
// token, sign in, find the organization, create a team space and a narrower API key, use it,
// meet its limits (a missing scope, another organization's space), revoke it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { problemCodeLogEnv } from '../../lib/problem-log.ts';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { sessionCookieFrom } from '../support/builders.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { client } from '../support/http.ts';
import { freePort } from '../../lib/free-port.ts';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const TOKEN = 'journey-bootstrap-token-0123456789';

let db: TestDatabase;
let dataDir: string;
let proc: ChildProcess;
let base: string;
let output = '';


async function waitReady(url: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the platform exited (${proc.exitCode}):\n${output}`);
    const ok = await fetch(`${url}/health/ready`).then((r) => r.status === 200, () => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`the platform was not ready within ${ms} ms:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

before(async () => {
  db = await freshDatabase();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'journey-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  proc = spawn(process.execPath, ['bin/start.mjs', 'platform'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...problemCodeLogEnv(),
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      BOOTSTRAP_TOKEN: TOKEN,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d) => (output += d));
  proc.stderr!.on('data', (d) => (output += d));
  await waitReady(base, 120_000);
});

after(async () => {
  if (proc && proc.exitCode === null) {
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000).unref())]);
    if (proc.exitCode === null) proc.kill('SIGKILL');
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
  await db.drop();
});

test('a newcomer bootstraps, signs in, makes a space and a narrow key, meets its limits and revokes it', async () => {
  const api = client(base);
  const owner = { email: 'first@example.test', password: 'first owner password', name: 'First Owner' };

  const redeemed = await api.post('/api/auth/bootstrap/redeem', { token: TOKEN, ...owner, organization_name: 'First Light' });
  assert.equal(redeemed.status, 201, redeemed.text);
  const orgId = redeemed.body.org_id as string;

  const signedIn = await api.post('/api/auth/sign-in/email', { email: owner.email, password: owner.password });
  assert.equal(signedIn.status, 200, signedIn.text);
  const cookie = sessionCookieFrom(signedIn.headers)!;
  assert.ok(cookie);

  const orgs = await api.get('/api/orgs', { cookie });
  assert.equal(orgs.status, 200);
  assert.deepEqual(orgs.body.data.map((o: { id: string; role: string; name: string }) => [o.id, o.role, o.name]), [[orgId, 'owner', 'First Light']]);

  const space = await api.post('/api/spaces', { name: 'Integrations' }, { cookie, org: orgId });
  assert.equal(space.status, 201, space.text);
  const spaceId = space.body.id as string;

  const made = await api.post('/api/api-keys', { name: 'integration', scopes: ['spaces:read', 'end-users:read'] }, { cookie, org: orgId, space: spaceId });
  assert.equal(made.status, 201, made.text);
  assert.deepEqual(made.body.scopes, ['spaces:read', 'end-users:read']);
  const key = made.body.key as string;

  const spaces = await api.get('/api/spaces', { key });
  assert.equal(spaces.status, 200);
  assert.deepEqual(spaces.body.data.map((s: { id: string }) => s.id), [spaceId]);
  assert.equal((await api.get('/api/end-users', { key })).status, 200);

  const lacking = await api.post('/api/end-users', { externalId: 'customer-1', name: 'Customer' }, { key });
  assert.equal(lacking.status, 403);
  assert.equal(lacking.body.code, 'forbidden');

  const second = await api.post('/api/orgs', { name: 'Second Org' }, { cookie });
  assert.equal(second.status, 201, second.text);
  // a key is bound to its space: naming another one is refused before any lookup (issue 29)
  const foreign = await api.get(`/api/spaces/${second.body.default_space_id}`, { key });
  assert.equal(foreign.status, 403);
  assert.equal(foreign.body.code, 'forbidden');

  const revoked = await api.delete(`/api/api-keys/${made.body.id}`, { cookie, org: orgId, space: spaceId });
  assert.equal(revoked.status, 204);
  const after = await api.get('/api/spaces', { key });
  assert.equal(after.status, 401);
  assert.equal(after.body.code, 'unauthorized');
});
