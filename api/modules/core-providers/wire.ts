// Wire schemas of the model provider family: request bodies (strict) and response records.
import { z } from 'zod';
import { limitParam } from '../../lists.ts';
import { REASONING_LEVELS } from './model-settings.ts';

const Name = z.string().trim().min(1).max(200);
const Provider = z.string().min(1).max(64).describe('openai-compatible (base_url required), or a preset: openai, anthropic, openrouter');
const BaseUrl = z.string().url().max(2048).describe('OpenAI-compatible base URL, usually ending in /v1');
const ApiKey = z.string().min(1).max(8192);

export const CredentialCreateBody = z.object({ provider: Provider, name: Name, base_url: BaseUrl.optional(), api_key: ApiKey.optional() }).strict();
export const CredentialTestBody = z.object({ provider: Provider, name: Name.optional(), base_url: BaseUrl.optional(), api_key: ApiKey.optional() }).strict();
export const CredentialPatchBody = z.object({ name: Name.optional(), base_url: BaseUrl.optional(), api_key: ApiKey.nullable().optional().describe('a new key; null removes it') }).strict();
export const DiscoverBody = z.object({
  credential_id: z.string().min(1).optional().describe('a stored credential; or describe one with provider, base_url, api_key'),
  provider: Provider.optional(),
  base_url: BaseUrl.optional(),
  api_key: ApiKey.optional(),
}).strict();

export const PairBody = CredentialCreateBody.extend({
  token: z.string().min(1).max(200).describe('the pairing token (mpp_...), used once'),
}).strict();

const Temperature = z.number().min(0).max(2);
const ReasoningEffort = z.string().min(1).max(32);
const ReasoningLevels = z.array(z.enum(REASONING_LEVELS)).max(REASONING_LEVELS.length).describe('levels the model accepts; empty: it does not reason');

export const ModelCreateBody = z.object({
  credential_id: z.string().min(1),
  model: z.string().trim().min(1).max(256).describe('the provider\'s model id'),
  name: Name.optional().describe('display name; defaults to the model id'),
  is_default: z.boolean().optional().describe('when omitted, the first enabled model of the organization becomes its default'),
  enabled: z.boolean().optional(),
  supports_temperature: z.boolean().optional(),
  reasoning_levels: ReasoningLevels.optional(),
  temperature: Temperature.nullable().optional(),
  reasoning_effort: ReasoningEffort.nullable().optional(),
}).strict();

export const ModelPatchBody = z.object({
  name: Name.optional(),
  is_default: z.boolean().optional(),
  enabled: z.boolean().optional(),
  supports_temperature: z.boolean().optional(),
  reasoning_levels: ReasoningLevels.optional(),
  temperature: Temperature.nullable().optional(),
  reasoning_effort: ReasoningEffort.nullable().optional(),
}).strict();

export const ModelTestBody = z.object({ credential_id: z.string().min(1), model: z.string().trim().min(1).max(256) }).strict();

export const IdParams = z.object({ id: z.string() });

export const OpenRouterQuery = z.object({
  q: z.string().max(200).optional().describe('matches the model id or name'),
  limit: limitParam(),
});

export const Credential = z.object({
  id: z.string(),
  object: z.literal('model_provider_credential'),
  provider: z.string(),
  name: z.string(),
  base_url: z.string(),
  api_key_set: z.boolean(),
  api_key_hint: z.string().nullable().describe('the last characters of the key; null for short keys or none'),
  model_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
}).meta({ id: 'ModelProviderCredential' });

export const Model = z.object({
  id: z.string(),
  object: z.literal('model'),
  credential_id: z.string(),
  provider: z.string(),
  model: z.string(),
  name: z.string(),
  is_default: z.boolean(),
  enabled: z.boolean(),
  supports_temperature: z.boolean(),
  reasoning_levels: z.array(z.string()),
  temperature: z.number().nullable(),
  reasoning_effort: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
}).meta({ id: 'Model' });

export const Pairing = z.object({
  id: z.string(),
  object: z.literal('model_provider_pairing'),
  status: z.enum(['pending', 'consumed', 'expired']),
  expires_at: z.string(),
  consumed_at: z.string().nullable(),
  credential_id: z.string().nullable().describe('the credential the redemption created (null before, or once it is deleted)'),
  created_at: z.string(),
}).meta({ id: 'ModelProviderPairing' });

export const PairingStarted = Pairing.extend({
  token: z.string().describe('mpp_...: shown this once; the tool holding the provider key sends it to POST /api/model-provider-pairings/redeem'),
}).meta({ id: 'ModelProviderPairingStarted' });

const OfferedModel = z.object({ id: z.string(), owned_by: z.string().nullable(), name: z.string().nullable(), context_length: z.number().nullable() });

export const listOf = <T extends z.ZodType>(item: T) => z.object({ object: z.literal('list'), data: z.array(item), hasMore: z.boolean() });
export const CredentialTestResult = z.object({ ok: z.literal(true), models: z.array(z.string()), latency_ms: z.number() });
export const DiscoverResult = z.object({ object: z.literal('list'), data: z.array(OfferedModel.extend({ model_id: z.string().nullable() })), latency_ms: z.number() });
export const ModelTestResult = z.object({ ok: z.literal(true), model: z.string(), finish_reason: z.string().nullable(), latency_ms: z.number() });
export const OfferedModelList = z.object({ object: z.literal('list'), data: z.array(OfferedModel) });

// ---------------------------------------------------------------- proxies

const ProxyUrl = z.string().min(1).max(2048).describe('http://host:port of an HTTP CONNECT proxy; credentials go in username and password');
const ProxyUser = z.string().min(1).max(512);
const ProxySecret = z.string().min(1).max(4096);

export const ProxyCreateBody = z.object({
  name: Name,
  url: ProxyUrl,
  username: ProxyUser.optional(),
  password: ProxySecret.optional().describe('needs username; stored sealed, never returned'),
  is_default: z.boolean().optional().describe('the organization\'s model traffic goes through its default proxy; at most one'),
}).strict();

export const ProxyPatchBody = z.object({
  name: Name.optional(),
  url: ProxyUrl.optional(),
  username: ProxyUser.nullable().optional().describe('replaces the credentials with password; null removes them'),
  password: ProxySecret.nullable().optional(),
  is_default: z.boolean().optional(),
}).strict();

export const ProxyTestBody = z.object({
  target_url: z.string().min(1).max(2048).describe('an http(s) URL fetched once (GET) through the proxy'),
}).strict();

export const ProxyRecord = z.object({
  id: z.string(),
  object: z.literal('proxy'),
  name: z.string(),
  url: z.string(),
  credentials_set: z.boolean().describe('whether a user name and password are stored (never returned)'),
  is_default: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
}).meta({ id: 'Proxy' });

export const ProxyTestResult = z.object({
  ok: z.literal(true),
  proxy_id: z.string(),
  target: z.string(),
  status: z.number().int().describe('the target\'s own status'),
  latency_ms: z.number(),
});
