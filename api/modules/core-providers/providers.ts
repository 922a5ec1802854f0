// The provider adapters this instance registers. Every one speaks the OpenAI-compatible wire
// (GET {base}/models, POST {base}/chat/completions); named providers are presets of the base URL
// plus the headers their endpoints expect, and say which other OpenAI endpoints they offer.

export interface ProviderAdapter {
  id: string;
  /** used when the credential names no base URL; required otherwise */
  defaultBaseUrl?: string;
  /** the headers that carry the key */
  authHeaders(apiKey: string): Record<string, string>;
  /** the token cap's field name in a chat completion (newer OpenAI models refuse max_tokens) */
  maxTokensField: 'max_tokens' | 'max_completion_tokens';
  /**
   * the OpenAI endpoints besides chat completions it serves (an OpenAI-compatible server is taken
   * at its word: one that answers 404 does not offer the endpoint or the model)
   */
  offers: readonly ModelEndpoint[];
}

/** OpenAI endpoints a provider may offer beside chat completions. */
export type ModelEndpoint = 'responses' | 'embeddings';

const bearer = (apiKey: string) => ({ authorization: `Bearer ${apiKey}` });

const ADAPTERS: readonly ProviderAdapter[] = [
  { id: 'openai-compatible', authHeaders: bearer, maxTokensField: 'max_tokens', offers: ['responses', 'embeddings'] },
  { id: 'openrouter', defaultBaseUrl: 'https://openrouter.ai/api/v1', authHeaders: bearer, maxTokensField: 'max_tokens', offers: ['responses', 'embeddings'] },
  { id: 'openai', defaultBaseUrl: 'https://api.openai.com/v1', authHeaders: bearer, maxTokensField: 'max_completion_tokens', offers: ['responses', 'embeddings'] },
  {
    id: 'anthropic',
    defaultBaseUrl: 'https://api.anthropic.com/v1',
    // its OpenAI-compatible chat takes the bearer; its model list reads x-api-key and a version
    authHeaders: (apiKey) => ({ ...bearer(apiKey), 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' }),
    maxTokensField: 'max_tokens',
    // its OpenAI compatibility is chat completions (and the model list) only
    offers: [],
  },
];

export const PROVIDER_IDS = ADAPTERS.map((a) => a.id);

export function providerAdapter(id: string): ProviderAdapter | undefined {
  return ADAPTERS.find((a) => a.id === id);
}

/** The base URL without trailing slashes, so `${base}/models` is well formed. */
export function normalizeBaseUrl(url: string): string {
  return url.trim().replace(/\/+$/, '');
}
