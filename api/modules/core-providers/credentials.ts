// Model provider credentials of an organization. The API key is sealed before it is stored and
// never leaves this file in clear except as a ProviderTarget for an outbound call; records show
// only whether a key is set and its last characters.
import { checkEgressTarget, EgressRefusal, type EgressOptions } from '../../../lib/egress.ts';
import { newId } from '../../../lib/ids.ts';
import { problem } from '../../../lib/problem.ts';
import type pg from 'pg';
import type { OrgScope } from '../../../db/tenant.ts';
import type { ProvidersDeps } from './module-deps.ts';
import { egressRefusalProblem, type ProviderTarget } from './provider-client.ts';
import { normalizeBaseUrl, providerAdapter } from './providers.ts';

export interface Credential {
  id: string;
  object: 'model_provider_credential';
  provider: string;
  name: string;
  base_url: string;
  api_key_set: boolean;
  api_key_hint: string | null;
  model_count: number;
  created_at: string;
  updated_at: string;
}

export interface CredentialInput {
  provider: string;
  name?: string;
  base_url?: string;
  api_key?: string | null;
}

interface Row {
  id: string;
  provider: string;
  name: string;
  base_url: string;
  api_key_sealed: string | null;
  api_key_hint: string | null;
  model_count: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `c.id, c.provider, c.name, c.base_url, c.api_key_sealed, c.api_key_hint, c.created_at, c.updated_at,
  (SELECT count(*)::int FROM models m WHERE m.credential_id = c.id) AS model_count`;

function toWire(r: Row): Credential {
  return {
    id: r.id,
    object: 'model_provider_credential',
    provider: r.provider,
    name: r.name,
    base_url: r.base_url,
    api_key_set: r.api_key_sealed !== null,
    api_key_hint: r.api_key_hint,
    model_count: r.model_count,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

const notFound = () => problem('not_found', { detail: 'No such model provider credential in this organization.' });

/** Short keys show no characters at all: four of eight would give half the key away. */
export function keyHint(apiKey: string): string | null {
  return apiKey.length >= 12 ? `…${apiKey.slice(-4)}` : null;
}

function adapterOf(provider: string) {
  const adapter = providerAdapter(provider);
  if (!adapter) throw problem('model_provider_unregistered', { detail: `The provider "${provider}" is not registered on this instance.` });
  return adapter;
}

// Saving resolves no names (no DNS wait, no lookup on behalf of a caller): it judges address
// literals and localhost; every call checks the resolved addresses again.
const lexicalResolve = async (host: string) => (host === 'localhost' || host.endsWith('.localhost') ? ['127.0.0.1'] : []);

/** Refuses a base URL that is malformed or names an internal address the operator did not allow. */
export async function vetBaseUrl(baseUrl: string, egress: EgressOptions): Promise<void> {
  try {
    await checkEgressTarget(baseUrl, { ...egress, resolve: lexicalResolve });
  } catch (err) {
    if (!(err instanceof EgressRefusal)) throw err;
    if (err.kind !== 'unresolvable') throw egressRefusalProblem(err);
  }
}

/** The provider, base URL and key an inline body describes, vetted like a stored credential. */
export async function inlineTarget(pdeps: ProvidersDeps, input: CredentialInput): Promise<ProviderTarget> {
  const adapter = adapterOf(input.provider);
  const raw = input.base_url ?? adapter.defaultBaseUrl;
  if (!raw) {
    throw problem('validation_failed', {
      detail: `The provider "${input.provider}" needs a base_url.`,
      errors: [{ field: 'base_url', code: 'required', message: 'This field is required.' }],
    });
  }
  const baseUrl = normalizeBaseUrl(raw);
  await vetBaseUrl(baseUrl, pdeps.egress);
  return { provider: adapter.id, baseUrl, apiKey: input.api_key ?? null };
}

export async function createCredential(scope: OrgScope, pdeps: ProvidersDeps, input: CredentialInput & { name: string }): Promise<Credential> {
  return insertCredential(scope.pool, { orgId: scope.orgId, userId: scope.actor.userId }, pdeps, await inlineTarget(pdeps, input), input.name);
}

/**
 * Stores a vetted target as a credential of the organization, its key sealed. The caller chooses
 * the connection: a pairing inserts inside the transaction that consumes its token.
 */
export async function insertCredential(
  db: Pick<pg.Pool, 'query'>,
  owner: { orgId: string; userId: string },
  pdeps: ProvidersDeps,
  target: ProviderTarget,
  name: string,
): Promise<Credential> {
  const sealed = target.apiKey ? pdeps.secrets.seal(target.apiKey) : null;
  const { rows } = await db.query<Row>(
    `INSERT INTO model_provider_credentials AS c (id, org_id, provider, name, base_url, api_key_sealed, api_key_hint, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [newId('cred'), owner.orgId, target.provider, name, target.baseUrl, sealed, target.apiKey ? keyHint(target.apiKey) : null, owner.userId],
  );
  return toWire(rows[0]);
}

export async function listCredentials(scope: OrgScope): Promise<Credential[]> {
  const { rows } = await scope.pool.query<Row>(`SELECT ${COLUMNS} FROM model_provider_credentials c WHERE c.org_id = $1 ORDER BY c.id COLLATE "C"`, [scope.orgId]);
  return rows.map(toWire);
}

async function findRow(scope: OrgScope, id: string): Promise<Row> {
  const { rows } = await scope.pool.query<Row>(`SELECT ${COLUMNS} FROM model_provider_credentials c WHERE c.id = $1 AND c.org_id = $2`, [id, scope.orgId]);
  if (!rows[0]) throw notFound();
  return rows[0];
}

export async function getCredential(scope: OrgScope, id: string): Promise<Credential> {
  return toWire(await findRow(scope, id));
}

/** Rename, move the base URL, rotate the key (null removes it). */
export async function updateCredential(
  scope: OrgScope,
  pdeps: ProvidersDeps,
  id: string,
  patch: { name?: string; base_url?: string; api_key?: string | null },
): Promise<Credential> {
  let baseUrl: string | null = null;
  if (patch.base_url !== undefined) {
    baseUrl = normalizeBaseUrl(patch.base_url);
    await vetBaseUrl(baseUrl, pdeps.egress);
  }
  const keyChanges = patch.api_key !== undefined;
  const sealed = patch.api_key ? pdeps.secrets.seal(patch.api_key) : null;
  const hint = patch.api_key ? keyHint(patch.api_key) : null;
  const { rows } = await scope.pool.query<Row>(
    `UPDATE model_provider_credentials AS c SET
       name = COALESCE($3, name),
       base_url = COALESCE($4, base_url),
       api_key_sealed = CASE WHEN $5::boolean THEN $6 ELSE api_key_sealed END,
       api_key_hint = CASE WHEN $5::boolean THEN $7 ELSE api_key_hint END,
       updated_at = now()
     WHERE c.id = $1 AND c.org_id = $2 RETURNING ${COLUMNS}`,
    [id, scope.orgId, patch.name ?? null, baseUrl, keyChanges, sealed, hint],
  );
  if (!rows[0]) throw notFound();
  return toWire(rows[0]);
}

export async function deleteCredential(scope: OrgScope, id: string): Promise<void> {
  try {
    const { rowCount } = await scope.pool.query('DELETE FROM model_provider_credentials WHERE id = $1 AND org_id = $2', [id, scope.orgId]);
    if (!rowCount) throw notFound();
  } catch (err) {
    if ((err as { code?: string }).code !== '23503') throw err;
    const { rows } = await scope.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM models WHERE credential_id = $1 AND org_id = $2', [id, scope.orgId]);
    throw problem('credential_in_use', { detail: `${rows[0]?.n ?? 'Some'} model(s) still use this credential; delete them first.` });
  }
}

/** Opens a sealed key; a key this instance cannot open must be entered again. */
export function openKey(pdeps: ProvidersDeps, sealed: string | null): string | null {
  if (sealed === null) return null;
  try {
    return pdeps.secrets.open(sealed);
  } catch {
    throw problem('model_needs_reconnection', { detail: 'The credential\'s API key cannot be read on this instance; enter it again.' });
  }
}

/** The stored credential as a target for an outbound call. */
export async function storedTarget(scope: OrgScope, pdeps: ProvidersDeps, id: string): Promise<ProviderTarget> {
  const row = await findRow(scope, id);
  return { provider: row.provider, baseUrl: row.base_url, apiKey: openKey(pdeps, row.api_key_sealed) };
}
