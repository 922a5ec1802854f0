// The model a run uses: the one it names, else the organization's default, with the
// organization's default proxy when it has one. One query.
import type { SecretBox } from '../../../lib/crypto.ts';
import { problem } from '../../../lib/problem.ts';
import type { OutboundProxy } from '../../../lib/proxy-tunnel.ts';
import type { OrgScope } from '../../../db/tenant.ts';
import { providerAdapter } from './providers.ts';
import { openProxy } from './proxies.ts';

export interface RunModel {
  modelId: string;
  /** the provider's model id */
  model: string;
  /** OpenAI-compatible base URL, without a trailing slash */
  baseUrl: string;
  apiKey: string;
  provider: string;
  /** the model's default call settings */
  temperature: number | null;
  reasoningEffort: string | null;
  /** what the model accepts (checkModelSettings) */
  supportsTemperature: boolean;
  reasoningLevels: string[];
  /** the organization's default proxy, through which the model is called; null: direct */
  proxy: OutboundProxy | null;
}

interface Row {
  id: string;
  model: string;
  enabled: boolean;
  temperature: number | null;
  reasoning_effort: string | null;
  supports_temperature: boolean;
  reasoning_levels: string[];
  provider: string;
  base_url: string;
  api_key_sealed: string | null;
  proxy_url: string | null;
  proxy_credentials_sealed: string | null;
}

/**
 * 400 model_not_configured when the run names no model and the organization has no default (or
 * names one it does not have); 409 model_disabled; 400 model_credential_missing when the
 * credential holds no key; 409 model_needs_reconnection when the key cannot be opened;
 * 409 model_provider_unregistered when the provider is not registered here.
 */
export async function resolveRunModel(scope: OrgScope, secrets: SecretBox, modelId?: string | null): Promise<RunModel> {
  const { rows } = await scope.pool.query<Row>(
    `SELECT m.id, m.model, m.enabled, m.temperature, m.reasoning_effort, m.supports_temperature, m.reasoning_levels, c.provider, c.base_url, c.api_key_sealed,
            p.url AS proxy_url, p.credentials_sealed AS proxy_credentials_sealed
       FROM models m JOIN model_provider_credentials c ON c.id = m.credential_id AND c.org_id = m.org_id
       LEFT JOIN proxies p ON p.org_id = m.org_id AND p.is_default
      WHERE m.org_id = $1 AND (CASE WHEN $2::text IS NULL THEN m.is_default ELSE m.id = $2 END)`,
    [scope.orgId, modelId ?? null],
  );
  const row = rows[0];
  if (!row) {
    throw problem('model_not_configured', {
      detail: modelId ? `The organization has no model ${modelId}.` : 'The run names no model and the organization has no default model.',
    });
  }
  if (!row.enabled) throw problem('model_disabled', { detail: `The model ${row.id} is disabled.` });
  if (!providerAdapter(row.provider)) throw problem('model_provider_unregistered', { detail: `The provider "${row.provider}" is not registered on this instance.` });
  if (row.api_key_sealed === null) throw problem('model_credential_missing', { detail: `The credential of model ${row.id} holds no API key.` });
  let apiKey: string;
  try {
    apiKey = secrets.open(row.api_key_sealed);
  } catch {
    throw problem('model_needs_reconnection', { detail: `The API key of model ${row.id}'s credential cannot be read on this instance; enter it again.` });
  }
  return {
    modelId: row.id,
    model: row.model,
    baseUrl: row.base_url,
    apiKey,
    provider: row.provider,
    temperature: row.temperature,
    reasoningEffort: row.reasoning_effort,
    supportsTemperature: row.supports_temperature,
    reasoningLevels: row.reasoning_levels,
    proxy: row.proxy_url === null ? null : openProxy(secrets, row.proxy_url, row.proxy_credentials_sealed),
  };
}

/**
 * The provider model names a run on `modelId` may embed with through its sidecar: the
 * organization's enabled models on that model's credential (the same key and base URL the sidecar
 * already holds), the run's own model first.
 */
export async function modelsSharingCredential(scope: OrgScope, modelId: string): Promise<string[]> {
  const { rows } = await scope.pool.query<{ model: string }>(
    `SELECT m.model FROM models m
      WHERE m.org_id = $1 AND m.enabled
        AND m.credential_id = (SELECT r.credential_id FROM models r WHERE r.org_id = $1 AND r.id = $2)
      ORDER BY (m.id = $2) DESC, m.model`,
    [scope.orgId, modelId],
  );
  return rows.map((r) => r.model);
}
