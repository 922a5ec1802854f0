// One organization furnished with a resource of every kind the route table names, in its default
// team space, plus a second team space: what the cross-tenant and cross-space matrix probes.
import { newRunEventSecret } from '../../lib/run-events.ts';
import { writeZip } from '../../lib/zip/write-zip.ts';
import type { TestApp } from './app.ts';
import { aKey, aMember, anOrg, aSession, aSpace } from './builders.ts';
import { importPackage } from './runs.ts';
import { notify } from '../../api/services/notifications.ts';

export interface Tenant {
  orgId: string;
  /** the default team space, where every resource below lives */
  s1: string;
  /** another team space of the same organization */
  s2: string;
  ownerId: string;
  ownerCookie: string;
  /** the owner's key pinned to s1, and to s2 */
  ownerKey1: string;
  ownerKey2: string;
  keyId: string;
  /** an organization member who holds space_admin in s2 and no role in s1 */
  s2MemberKey: string;
  s2MemberCookie: string;
  /** an organization member who holds space_admin in both spaces: their key pinned to s2 */
  bothMemberKey: string;
  bothMemberCookie: string;
  memberId: string;
  invitationId: string;
  roleId: string;
  endUserId: string;
  /** a run in s1, and a run of the same agent and actor in s2 */
  runId: string;
  runSecret: string;
  s2RunId: string;
  s2RunSecret: string;
  packageScope: string;
  agentName: string;
  skillName: string;
  credentialId: string;
  modelId: string;
  /** an outbound proxy of the organization */
  proxyId: string;
  /** a pending model-provider pairing started by the owner */
  pairingId: string;
  /** an integration package in s1 and the owner's connection to it there */
  integrationName: string;
  connectionId: string;
  /** a schedule of the agent in s1 */
  scheduleId: string;
  /** a space-level webhook in s1, and a notification of the owner in s1 */
  webhookId: string;
  notificationId: string;
  /** a durable file in s1, uploaded through the API */
  fileId: string;
  /** a space-level OAuth client in s1 */
  oauthClientId: string;
  /** organization-level resources, whose authority is an organization permission: a webhook and an OAuth client */
  orgWebhookId: string;
  orgOauthClientId: string;
  /** the owner's chat session in s1 (with one message), and the skill s1 enforces in its chats */
  chatSessionId: string;
  enforcedSkillId: string;
}

function archive(manifest: Record<string, unknown>, files: Record<string, string>): Buffer {
  const entries = new Map<string, Buffer>([['manifest.json', Buffer.from(JSON.stringify(manifest))]]);
  for (const [p, c] of Object.entries(files)) entries.set(p, Buffer.from(c));
  return writeZip(entries);
}

export async function aTenant(app: TestApp): Promise<Tenant> {
  const pool = app.deps.database.pool;
  const org = await anOrg(pool);
  const tag = org.orgId.slice(0, 8);
  const s2 = await aSpace(pool, org.orgId, { name: 'Other' });
  await aSpace(pool, org.orgId, { kind: 'personal', ownerUserId: org.ownerId, name: 'Personal' });
  const memberId = await aMember(pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'editor' });
  const s2Member = await aMember(pool, org.orgId, 'member', { spaceId: s2, roleKey: 'space_admin' });
  const k1 = await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
  const k2 = await aKey(pool, { orgId: org.orgId, spaceId: s2, userId: org.ownerId });
  const s2MemberKey = (await aKey(pool, { orgId: org.orgId, spaceId: s2, userId: s2Member })).key;
  const bothMember = await aMember(pool, org.orgId, 'member', { spaceId: s2, roleKey: 'space_admin' });
  await pool.query(`INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, 'space_admin')`, [org.spaceId, bothMember, org.orgId]);
  const bothMemberKey = (await aKey(pool, { orgId: org.orgId, spaceId: s2, userId: bothMember })).key;

  const roleId = `role_${tag}`;
  await pool.query(`INSERT INTO space_roles (id, org_id, key, name, permissions) VALUES ($1, $2, 'ops', 'Ops', '{spaces:read}')`, [roleId, org.orgId]);
  const invitationId = `inv_${tag}`;
  await pool.query(
    `INSERT INTO invitations (id, org_id, email, role, token_hash, expires_at) VALUES ($1, $2, 'pending@example.test', 'member', $3, now() + interval '1 day')`,
    [invitationId, org.orgId, `hash-${invitationId}`],
  );
  const endUserId = `eu_${tag}`;
  await pool.query(`INSERT INTO end_users (id, org_id, space_id, external_id, name) VALUES ($1, $2, $3, 'customer-1', 'Customer')`, [endUserId, org.orgId, org.spaceId]);

  const packageScope = `t${tag}`;
  const agentName = 'bot';
  const skillName = 'note';
  await importPackage(app.url, k1.key, archive({ name: `@${packageScope}/${agentName}`, version: '1.0.0', type: 'agent', schema_version: '0.3' }, { 'prompt.md': 'Say hello.' }));
  await importPackage(app.url, k1.key, archive({ name: `@${packageScope}/${skillName}`, version: '1.0.0', type: 'skill', schema_version: '0.3' }, {
    'SKILL.md': `---\nname: ${skillName}\ndescription: Notes things.\n---\nNote it.\n`,
  }));

  const integrationName = 'crm';
  await importPackage(app.url, k1.key, archive({
    name: `@${packageScope}/${integrationName}`, version: '1.0.0', type: 'integration', schema_version: '0.3',
    source: { kind: 'none' }, default_tools: ['api_call'],
    auths: { key: { type: 'api_key', credentials: { schema: { type: 'object', properties: { api_key: { type: 'string' } }, required: ['api_key'] } },
      authorized_uris: ['https://api.crm.example/*'], delivery: { http: { in: 'header', name: 'X-Api-Key', value: '{$credential.api_key}' } } } },
  }, {}));
  const { rows: connection } = await pool.query(
    `INSERT INTO integration_connections (org_id, space_id, integration_package_id, auth_key, owner_user_id, account_id, label, credentials)
     VALUES ($1, $2, $3, 'key', $4, 'default', 'Connection', $5) RETURNING id`,
    [org.orgId, org.spaceId, `@${packageScope}/${integrationName}`, org.ownerId, app.deps.secrets.seal(JSON.stringify({ api_key: 'tenant-secret' }))],
  );

  const aRun = async (id: string, spaceId: string) => {
    const secret = newRunEventSecret();
    await pool.query(
      `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at)
       VALUES ($1, $2, $3, $4, '1.0.0', 'running', 'member', $5, 60, $6, now() + interval '1 hour')`,
      [id, org.orgId, spaceId, `@${packageScope}/${agentName}`, org.ownerId, app.deps.secrets.seal(secret)],
    );
    await pool.query(`INSERT INTO run_logs (run_id, sequence, level, message, data) VALUES ($1, 1, 'info', $2, '{"kind":"pin"}')`, [id, `fact of ${id}`]);
    return secret;
  };
  const runId = `run_${tag}`;
  const s2RunId = `run_s2${tag}`;
  const runSecret = await aRun(runId, org.spaceId);
  const s2RunSecret = await aRun(s2RunId, s2);

  const credentialId = `mpc_${tag}`;
  await pool.query(
    `INSERT INTO model_provider_credentials (id, org_id, provider, name, base_url) VALUES ($1, $2, 'openai-compatible', 'Local', 'http://127.0.0.1:9/v1')`,
    [credentialId, org.orgId],
  );
  const modelId = `mdl_${tag}`;
  await pool.query(`INSERT INTO models (id, org_id, credential_id, model, name) VALUES ($1, $2, $3, 'fake', 'Fake')`, [modelId, org.orgId, credentialId]);
  const pairingId = `mpair_${tag}`;
  await pool.query(
    `INSERT INTO model_provider_pairings (id, org_id, token_hash, created_by, expires_at) VALUES ($1, $2, $3, $4, now() + interval '1 hour')`,
    [pairingId, org.orgId, `hash-of-${tag}`, org.ownerId],
  );
  const proxyId = `prx_${tag}`;
  await pool.query(`INSERT INTO proxies (id, org_id, name, url) VALUES ($1, $2, 'Office', 'http://127.0.0.1:9')`, [proxyId, org.orgId]);

  const scheduleId = `sched_${tag}`;
  await pool.query(
    `INSERT INTO schedules (id, org_id, space_id, agent_id, name, cron_expression, timezone, created_by, next_run_at)
     VALUES ($1, $2, $3, $4, 'Nightly', '0 3 * * *', 'UTC', $5, now() + interval '1 day')`,
    [scheduleId, org.orgId, org.spaceId, `@${packageScope}/${agentName}`, org.ownerId],
  );
  const webhookId = `wh_${tag}`;
  await pool.query(
    `INSERT INTO webhooks (id, org_id, space_id, level, url, events, payload_mode, secret_sealed, created_by)
     VALUES ($1, $2, $3, 'space', 'https://hooks.example.test/in', '{run.success}', 'summary', $4, $5)`,
    [webhookId, org.orgId, org.spaceId, app.deps.secrets.seal('whsec_dGVzdA=='), org.ownerId],
  );
  const oauthClientId = `oac_${tag}`;
  await pool.query(
    `INSERT INTO oauth_clients (id, level, org_id, space_id, name, redirect_uris, grant_types, token_endpoint_auth_method, secret_sealed, scopes, registration, created_by)
     VALUES ($1, 'space', $2, $3, 'Portal', '{https://portal.example.test/cb}', '{authorization_code}', 'client_secret_basic', $4, '{openid}', 'api', $5)`,
    [oauthClientId, org.orgId, org.spaceId, app.deps.secrets.seal('oacs_tenant'), org.ownerId],
  );
  const orgWebhookId = `wh_org_${tag}`;
  await pool.query(
    `INSERT INTO webhooks (id, org_id, space_id, level, url, events, payload_mode, secret_sealed, created_by)
     VALUES ($1, $2, NULL, 'org', 'https://hooks.example.test/org', '{run.success}', 'summary', $3, $4)`,
    [orgWebhookId, org.orgId, app.deps.secrets.seal('whsec_b3Jn'), org.ownerId],
  );
  const orgOauthClientId = `oac_org_${tag}`;
  await pool.query(
    `INSERT INTO oauth_clients (id, level, org_id, space_id, name, redirect_uris, grant_types, token_endpoint_auth_method, secret_sealed, scopes, registration, created_by)
     VALUES ($1, 'org', $2, NULL, 'Partner app', '{https://partner.example.test/cb}', '{authorization_code}', 'client_secret_basic', $3, '{openid}', 'api', $4)`,
    [orgOauthClientId, org.orgId, app.deps.secrets.seal('oacs_tenant_org'), org.ownerId],
  );
  const notificationId = (await notify(pool, {
    orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, kind: 'run_ended', title: 'Run ended', body: 'A run ended.', subject: { run_id: runId },
  })).id;
  const staged = await fetch(`${app.url}/api/uploads`, {
    method: 'POST', headers: { authorization: `Bearer ${k1.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'notes.txt', size: 5, mime_type: 'text/plain' }),
  }).then((r) => r.json()) as { upload_url: string };
  const fileId = ((await fetch(staged.upload_url, { method: 'PUT', body: 'notes' }).then((r) => r.json())) as { id: string }).id;

  const chatSessionId = `chat_${tag}`;
  await pool.query(`INSERT INTO chat_sessions (id, org_id, space_id, user_id, title) VALUES ($1, $2, $3, $4, 'Private chat')`, [chatSessionId, org.orgId, org.spaceId, org.ownerId]);
  await pool.query(`INSERT INTO chat_messages (id, session_id, org_id, role, content) VALUES ($1, $2, $3, 'user', 'a private question')`, [`cmsg_${tag}`, chatSessionId, org.orgId]);
  const enforcedSkillId = `@${packageScope}/${skillName}`;
  await pool.query(
    `INSERT INTO chat_enforced_skills (org_id, space_id, package_id, position, created_by) VALUES ($1, $2, $3, 0, $4)`,
    [org.orgId, org.spaceId, enforcedSkillId, org.ownerId],
  );

  return {
    webhookId, notificationId, oauthClientId, chatSessionId, enforcedSkillId, orgWebhookId, orgOauthClientId,
    orgId: org.orgId, s1: org.spaceId, s2, ownerId: org.ownerId,
    ownerCookie: (await aSession(pool, org.ownerId)).cookie,
    ownerKey1: k1.key, ownerKey2: k2.key, keyId: k1.keyId,
    s2MemberKey, s2MemberCookie: (await aSession(pool, s2Member)).cookie,
    bothMemberKey, bothMemberCookie: (await aSession(pool, bothMember)).cookie,
    memberId, invitationId, roleId, endUserId,
    runId, runSecret, s2RunId, s2RunSecret,
    integrationName, connectionId: connection[0].id,
    packageScope, agentName, skillName, credentialId, modelId, proxyId, pairingId, scheduleId, fileId,
  };
}

/** A fingerprint of every row of every table that carries the organization's id. */
export async function orgSnapshot(app: TestApp, orgId: string): Promise<Record<string, string>> {
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
