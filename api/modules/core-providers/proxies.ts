// Outbound HTTP proxies of an organization (HTTP CONNECT). The user name and password are sealed
// together before they are stored and never leave this file in clear except as an OutboundProxy
// for a call; records say only whether credentials are set. The organization's default proxy
// carries its model traffic (provider tests, discovery, the catalog search, the model proxy, a run's
// sidecar) and its integration traffic (a run's api_call and remote MCP calls, the credential proxy,
// connect logins and OAuth token calls).
import type pg from 'pg';
import { performance } from 'node:perf_hooks';
import { checkEgressTarget, EgressRefusal, guardedFetch } from '../../../lib/egress.ts';
import { newId } from '../../../lib/ids.ts';
import { isProblem, problem } from '../../../lib/problem.ts';
import { ProxyFailure, type OutboundProxy } from '../../../lib/proxy-tunnel.ts';
import { inTransaction } from '../../../db/transaction.ts';
import type { OrgScope } from '../../../db/tenant.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import type { ProvidersDeps } from './module-deps.ts';

export interface ProxyRecord {
  id: string;
  object: 'proxy';
  name: string;
  url: string;
  credentials_set: boolean;
  is_default: boolean;
  created_at: string;
  updated_at: string;
}

export interface ProxyInput {
  name: string;
  url: string;
  username?: string | null;
  password?: string | null;
  is_default?: boolean;
}

export interface ProxyTestResult {
  ok: true;
  proxy_id: string;
  target: string;
  status: number;
  latency_ms: number;
}

interface Row {
  id: string;
  name: string;
  url: string;
  credentials_sealed: string | null;
  is_default: boolean;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, name, url, credentials_sealed, is_default, created_at, updated_at';
const TEST_TIMEOUT_MS = 10_000;

function toWire(r: Row): ProxyRecord {
  return {
    id: r.id,
    object: 'proxy',
    name: r.name,
    url: r.url,
    credentials_set: r.credentials_sealed !== null,
    is_default: r.is_default,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

const notFound = () => problem('not_found', { detail: 'No such proxy in this organization.' });

const badUrl = (message: string) => problem('validation_failed', { detail: message, errors: [{ field: 'url', code: 'invalid_value', message }] });

// Saving resolves no names (as for provider base URLs): address literals and localhost are
// judged now, every call checks the resolved addresses again.
const lexicalResolve = async (host: string) => (host === 'localhost' || host.endsWith('.localhost') ? ['127.0.0.1'] : []);

/** http://host:port, credentials and paths refused; an internal address the operator did not allow is blocked_url. */
export async function normalizeProxyUrl(raw: string, pdeps: ProvidersDeps): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw badUrl('The proxy URL cannot be parsed.');
  }
  if (url.protocol !== 'http:') throw badUrl('The proxy must be an HTTP CONNECT proxy: http://host:port.');
  if (url.username || url.password) throw badUrl('Give the proxy\'s credentials in username and password, not in its URL.');
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) throw badUrl('The proxy URL names a host and port only.');
  const normalized = `http://${url.host}`;
  try {
    await checkEgressTarget(normalized, { ...pdeps.egress, resolve: lexicalResolve });
  } catch (err) {
    if (!(err instanceof EgressRefusal)) throw err;
    if (err.kind === 'blocked') {
      throw problem('blocked_url', {
        detail: `${err.message} Internal hosts are reachable only when the operator lists them in EGRESS_ALLOW_INTERNAL_HOSTS.`,
        errors: [{ field: 'url', code: 'invalid_value', message: 'Resolves to a private or reserved address.' }],
      });
    }
    if (err.kind === 'invalid_url') throw badUrl(err.message);
  }
  return normalized;
}

function sealCredentials(pdeps: ProvidersDeps, username: string | null | undefined, password: string | null | undefined): string | null {
  if (!username) {
    if (password) {
      throw problem('validation_failed', {
        detail: 'A proxy password needs a user name.',
        errors: [{ field: 'username', code: 'required', message: 'Required with password.' }],
      });
    }
    return null;
  }
  return pdeps.secrets.seal(JSON.stringify({ username, password: password ?? null }));
}

/** One writer of an organization's default proxy at a time. */
async function lockDefault(tx: pg.PoolClient, orgId: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`proxies.default:${orgId}`]);
}

export async function createProxy(scope: OrgScope, pdeps: ProvidersDeps, input: ProxyInput): Promise<ProxyRecord> {
  const url = await normalizeProxyUrl(input.url, pdeps);
  const sealed = sealCredentials(pdeps, input.username, input.password);
  const id = newId('prx');
  return inTransaction(scope.pool, async (tx) => {
    if (input.is_default) {
      await lockDefault(tx, scope.orgId);
      await tx.query('UPDATE proxies SET is_default = false, updated_at = now() WHERE org_id = $1 AND is_default', [scope.orgId]);
    }
    const { rows } = await tx.query<Row>(
      `INSERT INTO proxies (id, org_id, name, url, credentials_sealed, is_default, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
      [id, scope.orgId, input.name, url, sealed, input.is_default ?? false, scope.actor.userId],
    );
    return toWire(rows[0]);
  });
}

export async function listProxies(scope: OrgScope): Promise<ProxyRecord[]> {
  const { rows } = await scope.pool.query<Row>(`SELECT ${COLUMNS} FROM proxies WHERE org_id = $1 ORDER BY id COLLATE "C"`, [scope.orgId]);
  return rows.map(toWire);
}

async function findRow(scope: OrgScope, id: string): Promise<Row> {
  const { rows } = await scope.pool.query<Row>(`SELECT ${COLUMNS} FROM proxies WHERE id = $1 AND org_id = $2`, [id, scope.orgId]);
  if (!rows[0]) throw notFound();
  return rows[0];
}

export async function getProxy(scope: OrgScope, id: string): Promise<ProxyRecord> {
  return toWire(await findRow(scope, id));
}

/** Rename, move, replace or remove the credentials (username and password together), make it the default or not. */
export async function updateProxy(
  scope: OrgScope,
  pdeps: ProvidersDeps,
  id: string,
  patch: { name?: string; url?: string; username?: string | null; password?: string | null; is_default?: boolean },
): Promise<ProxyRecord> {
  const url = patch.url !== undefined ? await normalizeProxyUrl(patch.url, pdeps) : null;
  const credentialsChange = patch.username !== undefined || patch.password !== undefined;
  const sealed = credentialsChange ? sealCredentials(pdeps, patch.username, patch.password) : null;
  return inTransaction(scope.pool, async (tx) => {
    if (patch.is_default === true) {
      await lockDefault(tx, scope.orgId);
      await tx.query('UPDATE proxies SET is_default = false, updated_at = now() WHERE org_id = $1 AND is_default AND id <> $2', [scope.orgId, id]);
    }
    const { rows } = await tx.query<Row>(
      `UPDATE proxies SET
         name = COALESCE($3, name),
         url = COALESCE($4, url),
         credentials_sealed = CASE WHEN $5::boolean THEN $6 ELSE credentials_sealed END,
         is_default = COALESCE($7, is_default),
         updated_at = now()
       WHERE id = $1 AND org_id = $2 RETURNING ${COLUMNS}`,
      [id, scope.orgId, patch.name ?? null, url, credentialsChange, sealed, patch.is_default ?? null],
    );
    if (!rows[0]) throw notFound();
    return toWire(rows[0]);
  });
}

export async function deleteProxy(scope: OrgScope, id: string): Promise<void> {
  const { rowCount } = await scope.pool.query('DELETE FROM proxies WHERE id = $1 AND org_id = $2', [id, scope.orgId]);
  if (!rowCount) throw notFound();
}

/** The stored proxy as an OutboundProxy, its credentials opened; credentials this instance cannot open must be entered again. */
export function openProxy(secrets: SecretBox, url: string, credentialsSealed: string | null): OutboundProxy {
  if (credentialsSealed === null) return { url };
  let opened: { username: string; password: string | null };
  try {
    opened = JSON.parse(secrets.open(credentialsSealed));
  } catch {
    throw problem('model_needs_reconnection', { detail: 'The proxy\'s credentials cannot be read on this instance; enter them again.' });
  }
  return { url, username: opened.username, password: opened.password };
}

function outbound(pdeps: Pick<ProvidersDeps, 'secrets'>, row: Pick<Row, 'url' | 'credentials_sealed'>): OutboundProxy {
  return openProxy(pdeps.secrets, row.url, row.credentials_sealed);
}

/** The organization's default proxy, through which its model and integration traffic goes; null when it has none. */
export async function defaultProxyOf(scope: Pick<OrgScope, 'pool' | 'orgId'>, pdeps: Pick<ProvidersDeps, 'secrets'>): Promise<OutboundProxy | null> {
  const { rows } = await scope.pool.query<Pick<Row, 'url' | 'credentials_sealed'>>(
    'SELECT url, credentials_sealed FROM proxies WHERE org_id = $1 AND is_default', [scope.orgId],
  );
  return rows[0] ? outbound(pdeps, rows[0]) : null;
}

/** The catalog problem for a tunnel the proxy could not give. */
export function proxyFailureProblem(err: ProxyFailure) {
  const extra = err.status !== undefined ? { proxy_status: err.status } : undefined;
  switch (err.kind) {
    case 'blocked': return problem('blocked_target', { detail: `${err.message} Internal hosts are reachable only when the operator lists them in EGRESS_ALLOW_INTERNAL_HOSTS.` });
    case 'unresolvable': return problem('upstream_unresolvable', { detail: err.message });
    case 'timeout': return problem('upstream_timeout', { detail: err.message });
    default: return problem('upstream_unreachable', { detail: err.message, extra });
  }
}

/** One GET of the target through the proxy: proves the proxy, its credentials and the way to the target. */
export async function testProxy(scope: OrgScope, pdeps: ProvidersDeps, id: string, targetUrl: string): Promise<ProxyTestResult> {
  const proxy = outbound(pdeps, await findRow(scope, id));
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), TEST_TIMEOUT_MS);
  const started = performance.now();
  try {
    const res = await guardedFetch(targetUrl, {
      method: 'GET', headers: { accept: '*/*' }, signal: deadline.signal, timeoutMs: TEST_TIMEOUT_MS + 1_000, proxy,
    }, pdeps.egress);
    await res.body?.cancel().catch(() => {});
    return { ok: true, proxy_id: id, target: targetUrl, status: res.status, latency_ms: Math.round(performance.now() - started) };
  } catch (err) {
    if (isProblem(err)) throw err;
    if (err instanceof ProxyFailure) throw proxyFailureProblem(err);
    if (err instanceof EgressRefusal) {
      if (err.kind === 'invalid_url') throw problem('validation_failed', { detail: err.message, errors: [{ field: 'target_url', code: 'invalid_value', message: err.message }] });
      if (err.kind === 'unresolvable') throw problem('upstream_unresolvable', { detail: `The target: ${err.message}` });
      throw problem('blocked_target', { detail: `The target: ${err.message} Internal hosts are reachable only when the operator lists them in EGRESS_ALLOW_INTERNAL_HOSTS.` });
    }
    if (deadline.signal.aborted) throw problem('upstream_timeout', { detail: `The target did not answer through the proxy within ${TEST_TIMEOUT_MS / 1000} s.` });
    throw problem('upstream_unreachable', { detail: 'The target could not be reached through the proxy.' });
  } finally {
    clearTimeout(timer);
  }
}
