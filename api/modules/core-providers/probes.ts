// Live checks against a provider: test a credential (stored or not), discover the models it
// offers, test a model with a one-token completion. Nothing here writes.
import { problem } from '../../../lib/problem.ts';
import type { OrgScope } from '../../../db/tenant.ts';
import { inlineTarget, storedTarget, type CredentialInput } from './credentials.ts';
import type { ProvidersDeps } from './module-deps.ts';
import { modelCallFacts } from './models.ts';
import { listProviderModels, probeChatCompletion, type OfferedModel, type ProviderCallOptions, type ProviderTarget } from './provider-client.ts';
import { defaultProxyOf } from './proxies.ts';

export interface CredentialTestResult {
  ok: true;
  models: string[];
  latency_ms: number;
}

export interface DiscoveredModel extends OfferedModel {
  /** the organization's model already added from this credential, if any */
  model_id: string | null;
}

export interface ModelTestResult {
  ok: true;
  model: string;
  finish_reason: string | null;
  latency_ms: number;
}

/** Egress policy and the organization's default proxy, for a provider call made for it. */
export async function callOptionsFor(scope: Pick<OrgScope, 'pool' | 'orgId'>, pdeps: ProvidersDeps): Promise<ProviderCallOptions> {
  return { egress: pdeps.egress, proxy: await defaultProxyOf(scope, pdeps) };
}

async function testTarget(scope: OrgScope, pdeps: ProvidersDeps, target: ProviderTarget): Promise<CredentialTestResult> {
  const { models, latencyMs } = await listProviderModels(target, await callOptionsFor(scope, pdeps));
  return { ok: true, models: models.map((m) => m.id), latency_ms: latencyMs };
}

/** Tests a credential described in the body; nothing is stored. */
export async function testCredentialInput(scope: OrgScope, pdeps: ProvidersDeps, input: CredentialInput): Promise<CredentialTestResult> {
  return testTarget(scope, pdeps, await inlineTarget(pdeps, input));
}

export async function testStoredCredential(scope: OrgScope, pdeps: ProvidersDeps, id: string): Promise<CredentialTestResult> {
  return testTarget(scope, pdeps, await storedTarget(scope, pdeps, id));
}

/** The models a credential offers; for a stored one, each says which model of ours it already is. */
export async function discoverModels(
  scope: OrgScope,
  pdeps: ProvidersDeps,
  input: Partial<CredentialInput> & { credential_id?: string },
): Promise<{ object: 'list'; data: DiscoveredModel[]; latency_ms: number }> {
  let target: ProviderTarget;
  const added = new Map<string, string>();
  if (input.credential_id !== undefined) {
    target = await storedTarget(scope, pdeps, input.credential_id);
    const { rows } = await scope.pool.query<{ id: string; model: string }>('SELECT id, model FROM models WHERE credential_id = $1 AND org_id = $2', [input.credential_id, scope.orgId]);
    for (const r of rows) added.set(r.model, r.id);
  } else if (input.provider !== undefined) {
    target = await inlineTarget(pdeps, { provider: input.provider, base_url: input.base_url, api_key: input.api_key });
  } else {
    throw problem('validation_failed', {
      detail: 'Name a stored credential (credential_id) or describe one (provider, base_url, api_key).',
      errors: [{ field: 'credential_id', code: 'required', message: 'credential_id or provider is required.' }],
    });
  }
  const { models, latencyMs } = await listProviderModels(target, await callOptionsFor(scope, pdeps));
  return { object: 'list', data: models.map((m) => ({ ...m, model_id: added.get(m.id) ?? null })), latency_ms: latencyMs };
}

async function testModelOn(
  scope: OrgScope,
  pdeps: ProvidersDeps,
  call: { credentialId: string; model: string; temperature?: number | null; reasoningEffort?: string | null },
): Promise<ModelTestResult> {
  const target = await storedTarget(scope, pdeps, call.credentialId);
  if (!target.apiKey) throw problem('model_credential_missing', { detail: 'The credential holds no API key; set one first.' });
  const { latencyMs, finishReason } = await probeChatCompletion(target, call.model, call, await callOptionsFor(scope, pdeps));
  return { ok: true, model: call.model, finish_reason: finishReason, latency_ms: latencyMs };
}

export async function testModelInput(scope: OrgScope, pdeps: ProvidersDeps, input: { credential_id: string; model: string }): Promise<ModelTestResult> {
  return testModelOn(scope, pdeps, { credentialId: input.credential_id, model: input.model });
}

export async function testStoredModel(scope: OrgScope, pdeps: ProvidersDeps, id: string): Promise<ModelTestResult> {
  return testModelOn(scope, pdeps, await modelCallFacts(scope, id));
}
