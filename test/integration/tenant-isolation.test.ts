// Two organizations with the same kinds of resources. Every protected route of the route table
// that takes a path parameter is called with organization A's credentials and organization B's
// ids: the answer is 404 (an API key may instead be refused with 403 forbidden for lacking a
// permission no key can hold), and nothing of organization B changes. Routes added later are
// covered by themselves; a path parameter this file cannot fill fails loudly: extend RESOURCE_OF.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RouteDef } from '../../api/route.ts';
import { allRoutes } from '../../api/routes/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, aSpace } from '../support/builders.ts';
import { call, type CallOptions } from '../support/http.ts';

interface Tenant {
  orgId: string;
  defaultSpaceId: string;
  teamSpaceId: string;
  ownerId: string;
  memberId: string;
  invitationId: string;
  roleId: string;
  keyId: string;
  key: string;
  endUserId: string;
  runId: string;
  scheduleId: string;
  packageScope: string;
  fileId: string;
  connectionId: string;
  notificationId: string;
  approvalId: string;
}

/** `<segment before the parameter>/{<parameter>}` to the id of that resource in a tenant. */
const RESOURCE_OF: Record<string, (t: Tenant) => string> = {
  'orgs/{orgId}': (t) => t.orgId,
  'members/{userId}': (t) => t.memberId,
  'invitations/{invitationId}': (t) => t.invitationId,
  'roles/{roleId}': (t) => t.roleId,
  'spaces/{spaceId}': (t) => t.teamSpaceId,
  'api-keys/{id}': (t) => t.keyId,
  'end-users/{id}': (t) => t.endUserId,
  'files/{id}': (t) => t.fileId,
  'runs/{id}': (t) => t.runId,
  'schedules/{id}': (t) => t.scheduleId,
  // Package ids (@scope/name) are unique per organization: each tenant's scope is its own.
  'agents/{scope}': (t) => `@${t.packageScope}`,
  'packages/{scope}': (t) => `@${t.packageScope}`,
  'skills/{scope}': (t) => `@${t.packageScope}`,
  '{scope}/{name}': () => 'bot',
  '{name}/{version}': () => '1.0.0',
  'versions/{version}': () => '1.0.0',
  'dist-tags/{tag}': () => 'beta',
  'integrations/{scope}': (t) => `@${t.packageScope}`,
  'auths/{auth_key}': () => 'key',
  'connections/{id}': (t) => t.connectionId,
  'notifications/{id}': (t) => t.notificationId,
  'approvals/{approval_id}': (t) => t.approvalId,
  'agents/{packageId}': (t) => encodeURIComponent(`@${t.packageScope}/bot`),
};

/** Bodies that pass validation, so the call reaches the lookup that must miss. */
const SAMPLE_BODY: Record<string, (b: Tenant) => unknown> = {
  'PATCH /api/orgs/{orgId}': () => ({ name: 'Hijacked' }),
  'PATCH /api/orgs/{orgId}/members/{userId}': () => ({ role: 'guest' }),
  'POST /api/orgs/{orgId}/invitations': () => ({ email: 'intruder@example.test', role: 'member' }),
  'POST /api/orgs/{orgId}/roles': () => ({ key: 'hijack', name: 'Hijack', permissions: [] }),
  'PATCH /api/orgs/{orgId}/roles/{roleId}': () => ({ name: 'Hijacked' }),
  'PATCH /api/spaces/{spaceId}': () => ({ name: 'Hijacked' }),
  'POST /api/spaces/{spaceId}/members': (b) => ({ userId: b.memberId, role_key: 'viewer' }),
  'POST /api/spaces/{spaceId}/join': () => ({ visibility: 'org', default_role: 'viewer' }),
  'POST /api/packages/{scope}/{name}/fork': (b) => ({ name: `@${b.packageScope}/probe-fork` }),
  'PATCH /api/spaces/{spaceId}/members/{userId}': () => ({ role_key: 'viewer' }),
  'PATCH /api/end-users/{id}': () => ({ name: 'Hijacked' }),
  'POST /api/spaces/{spaceId}/packages': (b) => ({ packageId: `@${b.packageScope}/bot` }),
  'PATCH /api/spaces/{spaceId}/packages/{scope}/{name}': () => ({ active: false }),
  'PUT /api/packages/{scope}/{name}/draft': () => ({ manifest: {} }),
  'PUT /api/packages/{scope}/{name}/draft/files': () => ({ path: 'prompt.md', content: 'hijacked' }),
  'POST /api/packages/{scope}/{name}/draft/move': () => ({ from: 'prompt.md', to: 'moved.md' }),
  'PUT /api/packages/{scope}/{name}/dist-tags/{tag}': () => ({ version: '1.0.0' }),
  'POST /api/agents/{scope}/{name}/schedules': () => ({ name: 'Hijack', cron_expression: '* * * * *', timezone: 'UTC' }),
  'POST /api/runs/{id}/approvals/{approval_id}': () => ({ decision: 'approve' }),
  'PATCH /api/schedules/{id}': () => ({ name: 'Hijacked' }),
  'POST /api/schedules/{id}/enable': () => ({}),
  'POST /api/schedules/{id}/disable': () => ({}),
  'POST /api/integrations/{scope}/{name}/auths/{auth_key}/connect/fields': () => ({ credentials: { api_key: 'stolen' } }),
  'POST /api/integrations/{scope}/{name}/auths/{auth_key}/connect/session': () => ({}),
  'PUT /api/integrations/{scope}/{name}/settings': () => ({ personal_connections_disabled: true }),
  'PATCH /api/connections/{id}': () => ({ label: 'Hijacked' }),
  'PUT /api/connections/{id}/pins': () => ({ agents: [] }),
  'POST /api/notifications/{id}/read': () => ({}),
};

/** Query strings that pass validation, for routes that require one. */
const SAMPLE_QUERY: Record<string, string> = {
  'GET /api/packages/{scope}/{name}/files/content': '?path=manifest.json',
  'DELETE /api/packages/{scope}/{name}/draft/files': '?path=prompt.md',
};

let app: TestApp;
let a: Tenant;
let b: Tenant;

async function aTenant(): Promise<Tenant> {
  const pool = app.deps.database.pool;
  const org = await anOrg(pool);
  const teamSpaceId = await aSpace(pool, org.orgId, { name: 'Team' });
  await aSpace(pool, org.orgId, { kind: 'personal', ownerUserId: org.ownerId, name: 'Personal' });
  const memberId = await aMember(pool, org.orgId, 'member', { spaceId: teamSpaceId, roleKey: 'editor' });
  const { keyId, key } = await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
  const roleId = `role_${org.orgId.slice(0, 8)}`;
  await pool.query(`INSERT INTO space_roles (id, org_id, key, name, permissions) VALUES ($1, $2, 'ops', 'Ops', '{spaces:read}')`, [roleId, org.orgId]);
  const invitationId = `inv_${org.orgId.slice(0, 8)}`;
  await pool.query(
    `INSERT INTO invitations (id, org_id, email, role, token_hash, expires_at) VALUES ($1, $2, 'pending@example.test', 'member', $3, now() + interval '1 day')`,
    [invitationId, org.orgId, `hash-${invitationId}`],
  );
  const endUserId = `eu_${org.orgId.slice(0, 8)}`;
  await pool.query(`INSERT INTO end_users (id, org_id, space_id, external_id, name) VALUES ($1, $2, $3, 'customer-1', 'Customer')`, [endUserId, org.orgId, org.spaceId]);
  const runId = `run_${org.orgId.slice(0, 8)}`;
  await pool.query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at)
     VALUES ($1, $2, $3, '@acme/bot', '1.0.0', 'running', 'member', $4, 60, 'sealed', now() + interval '1 hour')`,
    [runId, org.orgId, org.spaceId, org.ownerId],
  );
  const packageScope = `t${org.orgId.slice(0, 8)}`;
  await pool.query(
    `INSERT INTO packages (org_id, id, type, home_space_id, draft_integrity) VALUES ($1, $2, 'agent', $3, 'sha256-none')`,
    [org.orgId, `@${packageScope}/bot`, org.spaceId],
  );
  const scheduleId = `sched_${org.orgId.slice(0, 8)}`;
  await pool.query(
    `INSERT INTO schedules (id, org_id, space_id, agent_id, name, cron_expression, timezone, created_by, next_run_at)
     VALUES ($1, $2, $3, $4, 'Nightly', '0 3 * * *', 'UTC', $5, now() + interval '1 day')`,
    [scheduleId, org.orgId, org.spaceId, `@${packageScope}/bot`, org.ownerId],
  );
  const fileId = `file_${org.orgId.slice(0, 8)}`;
  await pool.query(
    `INSERT INTO files (id, org_id, space_id, name, size, mime_type, sha256, storage_key, source) VALUES ($1, $2, $3, 'a.txt', 1, 'text/plain', $4, $5, 'upload')`,
    [fileId, org.orgId, org.spaceId, '0'.repeat(64), `${org.orgId}/${fileId}`],
  );
  const { rows: conn } = await pool.query<{ id: string }>(
    `INSERT INTO integration_connections (org_id, space_id, integration_package_id, auth_key, owner_user_id, account_id, label, credentials)
     VALUES ($1, $2, $3, 'key', $4, 'acct', 'Mine', 'sealed') RETURNING id`,
    [org.orgId, org.spaceId, `@${packageScope}/bot`, org.ownerId],
  );
  const notificationId = `ntf_${org.orgId.slice(0, 8)}`;
  await pool.query(
    `INSERT INTO notifications (id, org_id, space_id, user_id, kind, title, body, subject) VALUES ($1, $2, $3, $4, 'run_ended', 'Run ended', 'A run ended.', '{}')`,
    [notificationId, org.orgId, org.spaceId, org.ownerId],
  );
  const approvalId = `apr_${org.orgId.slice(0, 8)}`;
  await pool.query(
    `INSERT INTO run_approvals (id, org_id, space_id, run_id, sequence, tool, arguments, timeout_seconds) VALUES ($1, $2, $3, $4, 1, 'publish_file', '{}', 60)`,
    [approvalId, org.orgId, org.spaceId, runId],
  );
  return {
    packageScope, orgId: org.orgId, defaultSpaceId: org.spaceId, teamSpaceId, ownerId: org.ownerId, memberId, invitationId, roleId, keyId, key,
    endUserId, runId, scheduleId, fileId, connectionId: conn[0].id, notificationId, approvalId,
  };
}

/** A fingerprint of every row of every table that carries the organization's id. */
async function snapshot(orgId: string): Promise<Record<string, string>> {
  const pool = app.deps.database.pool;
  const { rows: tables } = await pool.query(
    `SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
      WHERE c.table_schema = current_schema() AND c.column_name = 'org_id' AND t.table_type = 'BASE TABLE' ORDER BY 1`,
  );
  const out: Record<string, string> = {};
  for (const { table_name } of tables) {
    const { rows } = await pool.query(`SELECT count(*)::int AS n, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS h FROM "${table_name}" x WHERE org_id = $1`, [orgId]);
    out[table_name] = `${rows[0].n}:${rows[0].h}`;
  }
  return out;
}

interface Attempt {
  route: RouteDef;
  path: string;
  label: string;
}

/** `<previous segment>/{<parameter>}` for each path parameter of a route. */
function paramKeys(path: string): string[] {
  const segs = path.split('/');
  return segs.flatMap((s, i) => (/^\{\w+\}$/.test(s) ? [`${segs[i - 1]}/${s}`] : []));
}

const protectedWithParams = () => allRoutes().filter((r) => (r.stage ?? 'protected') === 'protected' && r.path.includes('{'));

/** For each fillable route: B's ids everywhere, and, under /api/orgs/{orgId}/..., A's org with B's ids below it. */
function attempts(): Attempt[] {
  const out: Attempt[] = [];
  for (const route of protectedWithParams()) {
    if (!paramKeys(route.path).every((k) => RESOURCE_OF[k])) continue;
    const fill = (ownOrg: boolean) => {
      const segs = route.path.split('/');
      return segs.map((s, i) => {
        if (!/^\{\w+\}$/.test(s)) return s;
        const tenant = ownOrg && s === '{orgId}' ? a : b;
        return RESOURCE_OF[`${segs[i - 1]}/${s}`]!(tenant);
      }).join('/');
    };
    const name = `${route.method.toUpperCase()} ${route.path}`;
    out.push({ route, path: fill(false), label: `${name} with B's ids` });
    if (route.path.startsWith('/api/orgs/{orgId}/') && paramKeys(route.path).length > 1) {
      out.push({ route, path: fill(true), label: `${name} in A with B's ids` });
    }
  }
  return out;
}

before(async () => {
  app = await startTestApp();
  a = await aTenant();
  b = await aTenant();
});
after(() => app.close());

test('organization A cannot reach or change anything of organization B through any route with a path parameter', async () => {
  const before = await snapshot(b.orgId);
  const session = (await aSession(app.deps.database.pool, a.ownerId)).cookie;
  const credentials: Array<{ name: string; opts: CallOptions; allowForbidden: boolean }> = [
    { name: "A's API key", opts: { key: a.key }, allowForbidden: true },
    { name: "A's owner session", opts: { cookie: session, org: a.orgId, space: a.defaultSpaceId }, allowForbidden: false },
  ];
  const wrong: string[] = [];
  const list = attempts();
  assert.ok(list.length > 10, 'the route table has routes with path parameters');
  for (const attempt of list) {
    const key = `${attempt.route.method.toUpperCase()} ${attempt.route.path}`;
    const body = attempt.route.body ? (SAMPLE_BODY[key]?.(b) ?? {}) : undefined;
    for (const cred of credentials) {
      const res = await call(app.url, attempt.route.method.toUpperCase(), attempt.path + (SAMPLE_QUERY[key] ?? ''), { ...cred.opts, body });
      if (res.status === 400 && res.body?.code === 'validation_failed') {
        wrong.push(`${attempt.label} (${cred.name}): body refused before the lookup; add a SAMPLE_BODY for "${key}"`);
        continue;
      }
      if (res.status === 400 && res.body?.code === 'invalid_request' && !SAMPLE_QUERY[key]) {
        wrong.push(`${attempt.label} (${cred.name}): query refused before the lookup (${res.body.param}); add a SAMPLE_QUERY for "${key}"`);
        continue;
      }
      const ok = res.status === 404 || (cred.allowForbidden && res.status === 403 && res.body?.code === 'forbidden');
      if (!ok) wrong.push(`${attempt.label} (${cred.name}): ${res.status} ${res.body?.code ?? res.text.slice(0, 80)}`);
    }
  }
  assert.deepEqual(wrong, []);
  assert.deepEqual(await snapshot(b.orgId), before);
});

test('every path parameter of the route table has an organization-B resource here', () => {
  const missing = new Map<string, string>();
  for (const route of protectedWithParams()) {
    for (const k of paramKeys(route.path)) if (!RESOURCE_OF[k] && !missing.has(k)) missing.set(k, `${route.method.toUpperCase()} ${route.path}`);
  }
  const lines = [...missing].map(([k, example]) => `"${k}" (e.g. ${example})`);
  assert.deepEqual(lines, [], 'extend RESOURCE_OF (and SAMPLE_BODY for routes with a body) in this file');
});

test("a key of organization A used with B's context headers is bound to A: X-Space-Id or X-Org-Id of B is 403", async () => {
  const spaceHeader = await call(app.url, 'GET', '/api/end-users', { key: a.key, space: b.defaultSpaceId });
  assert.equal(spaceHeader.status, 403);
  assert.equal(spaceHeader.body.code, 'forbidden');
  const orgHeader = await call(app.url, 'GET', '/api/spaces', { key: a.key, org: b.orgId });
  assert.equal(orgHeader.status, 403);
  assert.equal(orgHeader.body.code, 'forbidden');
  // its own organization named, or none: the key's organization
  const own = await call(app.url, 'GET', '/api/spaces', { key: a.key, org: a.orgId });
  assert.equal(own.status, 200);
  assert.ok(own.body.data.every((s: { id: string }) => s.id === a.defaultSpaceId));
});

test("a session of A naming B's organization or space is refused", async () => {
  const session = (await aSession(app.deps.database.pool, a.ownerId)).cookie;
  const org = await call(app.url, 'GET', '/api/spaces', { cookie: session, org: b.orgId });
  assert.equal(org.status, 403);
  const space = await call(app.url, 'GET', '/api/end-users', { cookie: session, org: a.orgId, space: b.defaultSpaceId });
  assert.equal(space.status, 403);
  assert.equal(space.body.code, 'not_a_space_member');
});
