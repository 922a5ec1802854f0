// Models an organization added from its provider credentials. At most one is the default (what a
// run uses when it names none); a disabled model can never be it. Changes that move the default
// are serialized per organization.
import type pg from 'pg';
import { newId } from '../../../lib/ids.ts';
import { problem } from '../../../lib/problem.ts';
import type { OrgScope } from '../../../db/tenant.ts';
import { checkModelSettings } from './model-settings.ts';
import { inTransaction } from '../../../db/transaction.ts';

export interface Model {
  id: string;
  object: 'model';
  credential_id: string;
  provider: string;
  model: string;
  name: string;
  is_default: boolean;
  enabled: boolean;
  supports_temperature: boolean;
  reasoning_levels: string[];
  temperature: number | null;
  reasoning_effort: string | null;
  created_at: string;
  updated_at: string;
}

export interface ModelInput {
  credential_id: string;
  model: string;
  name: string;
  is_default?: boolean;
  enabled?: boolean;
  supports_temperature?: boolean;
  reasoning_levels?: string[];
  temperature?: number | null;
  reasoning_effort?: string | null;
}

export type ModelPatch = Partial<Omit<ModelInput, 'credential_id' | 'model'>>;

interface Row {
  id: string;
  credential_id: string;
  provider: string;
  model: string;
  name: string;
  is_default: boolean;
  enabled: boolean;
  supports_temperature: boolean;
  reasoning_levels: string[];
  temperature: number | null;
  reasoning_effort: string | null;
  created_at: Date;
  updated_at: Date;
}

const MODEL_COLUMNS = 'm.id, m.credential_id, m.model, m.name, m.is_default, m.enabled, m.supports_temperature, m.reasoning_levels, m.temperature, m.reasoning_effort, m.created_at, m.updated_at';
const SELECT = `SELECT ${MODEL_COLUMNS}, c.provider FROM models m JOIN model_provider_credentials c ON c.id = m.credential_id`;

function toWire(r: Row): Model {
  return {
    id: r.id,
    object: 'model',
    credential_id: r.credential_id,
    provider: r.provider,
    model: r.model,
    name: r.name,
    is_default: r.is_default,
    enabled: r.enabled,
    supports_temperature: r.supports_temperature,
    reasoning_levels: r.reasoning_levels,
    temperature: r.temperature,
    reasoning_effort: r.reasoning_effort,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

const notFound = () => problem('not_found', { detail: 'No such model in this organization.' });


/** One writer of an organization's default at a time. */
async function lockDefault(tx: pg.PoolClient, orgId: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`models.default:${orgId}`]);
}

async function clearDefault(tx: pg.PoolClient, orgId: string, exceptId: string): Promise<void> {
  await tx.query('UPDATE models SET is_default = false, updated_at = now() WHERE org_id = $1 AND is_default AND id <> $2', [orgId, exceptId]);
}

export async function createModel(scope: OrgScope, input: ModelInput): Promise<Model> {
  const enabled = input.enabled ?? true;
  if (input.is_default === true && !enabled) throw problem('model_disabled', { detail: 'A disabled model cannot be the default.' });
  checkModelSettings(
    { supportsTemperature: input.supports_temperature ?? true, reasoningLevels: input.reasoning_levels ?? [] },
    { temperature: input.temperature, reasoningEffort: input.reasoning_effort },
  );
  const id = newId('mdl');
  return inTransaction(scope.pool, async (tx) => {
    // FOR SHARE: the credential cannot be deleted while its model is being added
    const { rows: creds } = await tx.query<{ has_key: boolean }>(
      'SELECT api_key_sealed IS NOT NULL AS has_key FROM model_provider_credentials WHERE id = $1 AND org_id = $2 FOR SHARE',
      [input.credential_id, scope.orgId],
    );
    if (!creds[0]) throw problem('not_found', { detail: 'No such model provider credential in this organization.', param: 'credential_id' });
    if (!creds[0].has_key) throw problem('model_credential_missing', { detail: 'The credential holds no API key; set one first.' });
    await lockDefault(tx, scope.orgId);
    let isDefault = input.is_default ?? false;
    if (input.is_default === undefined && enabled) {
      // the first enabled model of an organization becomes its default unless told otherwise
      const { rows } = await tx.query('SELECT 1 FROM models WHERE org_id = $1 AND is_default LIMIT 1', [scope.orgId]);
      isDefault = rows.length === 0;
    }
    if (isDefault) await clearDefault(tx, scope.orgId, id);
    try {
      await tx.query(
        `INSERT INTO models (id, org_id, credential_id, model, name, is_default, enabled, supports_temperature, reasoning_levels, temperature, reasoning_effort, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        [id, scope.orgId, input.credential_id, input.model, input.name, isDefault, enabled, input.supports_temperature ?? true, input.reasoning_levels ?? [],
          input.temperature ?? null, input.reasoning_effort ?? null, scope.actor.userId],
      );
    } catch (err) {
      if ((err as { code?: string; constraint?: string }).constraint === 'models_credential_model_uq') {
        throw problem('model_already_added', {
          detail: `The model "${input.model}" is already added for this credential.`,
          errors: [{ field: 'model', code: 'invalid_value', message: 'Already added for this credential.' }],
        });
      }
      throw err;
    }
    const { rows } = await tx.query<Row>(`${SELECT} WHERE m.id = $1`, [id]);
    return toWire(rows[0]);
  });
}

export async function listModels(scope: OrgScope): Promise<Model[]> {
  const { rows } = await scope.pool.query<Row>(`${SELECT} WHERE m.org_id = $1 ORDER BY m.id COLLATE "C"`, [scope.orgId]);
  return rows.map(toWire);
}

export async function getModel(scope: OrgScope, id: string): Promise<Model> {
  const { rows } = await scope.pool.query<Row>(`${SELECT} WHERE m.id = $1 AND m.org_id = $2`, [id, scope.orgId]);
  if (!rows[0]) throw notFound();
  return toWire(rows[0]);
}

export async function updateModel(scope: OrgScope, id: string, patch: ModelPatch): Promise<Model> {
  return inTransaction(scope.pool, async (tx) => {
    await lockDefault(tx, scope.orgId);
    const { rows: current } = await tx.query<Row>(`${SELECT} WHERE m.id = $1 AND m.org_id = $2 FOR UPDATE OF m`, [id, scope.orgId]);
    const was = current[0];
    if (!was) throw notFound();
    const next = {
      name: patch.name ?? was.name,
      is_default: patch.is_default ?? was.is_default,
      enabled: patch.enabled ?? was.enabled,
      supports_temperature: patch.supports_temperature ?? was.supports_temperature,
      reasoning_levels: patch.reasoning_levels ?? was.reasoning_levels,
      temperature: patch.temperature !== undefined ? patch.temperature : was.temperature,
      reasoning_effort: patch.reasoning_effort !== undefined ? patch.reasoning_effort : was.reasoning_effort,
    };
    if (next.is_default && !next.enabled) {
      throw problem('model_disabled', {
        detail: was.is_default && patch.enabled === false ? 'The default model cannot be disabled; make another model the default first.' : 'A disabled model cannot be the default.',
      });
    }
    checkModelSettings(
      { supportsTemperature: next.supports_temperature, reasoningLevels: next.reasoning_levels },
      { temperature: next.temperature, reasoningEffort: next.reasoning_effort },
    );
    if (next.is_default && !was.is_default) await clearDefault(tx, scope.orgId, id);
    await tx.query(
      `UPDATE models SET name = $3, is_default = $4, enabled = $5, supports_temperature = $6, reasoning_levels = $7, temperature = $8, reasoning_effort = $9, updated_at = now()
       WHERE id = $1 AND org_id = $2`,
      [id, scope.orgId, next.name, next.is_default, next.enabled, next.supports_temperature, next.reasoning_levels, next.temperature, next.reasoning_effort],
    );
    const { rows } = await tx.query<Row>(`${SELECT} WHERE m.id = $1`, [id]);
    return toWire(rows[0]);
  });
}

export async function deleteModel(scope: OrgScope, id: string): Promise<void> {
  const { rowCount } = await scope.pool.query('DELETE FROM models WHERE id = $1 AND org_id = $2', [id, scope.orgId]);
  if (!rowCount) throw notFound();
}

/** The model's call target facts, for its test call. */
export async function modelCallFacts(scope: OrgScope, id: string): Promise<{ credentialId: string; model: string; temperature: number | null; reasoningEffort: string | null }> {
  const m = await getModel(scope, id);
  return { credentialId: m.credential_id, model: m.model, temperature: m.temperature, reasoningEffort: m.reasoning_effort };
}
