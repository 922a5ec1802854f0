// Live search of OpenRouter's public model catalog (OPENROUTER_BASE_URL), to pick a model id
// before adding it. The catalog is read without a key, through the caller's organization's
// default proxy when it has one, and kept for a few minutes per process.
import { listProviderModels, type OfferedModel, type ProviderCallOptions } from './provider-client.ts';
import { providerAdapter } from './providers.ts';

const FRESH_MS = 10 * 60_000;
const cache = new Map<string, { at: number; models: OfferedModel[] }>();

export const OPENROUTER_BASE_URL = providerAdapter('openrouter')!.defaultBaseUrl!;

/** Models whose id or name contains `q` (case-insensitive), at most `limit`. */
export async function searchOpenRouterModels(
  call: ProviderCallOptions,
  query: { q?: string; limit: number },
  baseUrl: string = OPENROUTER_BASE_URL,
): Promise<{ object: 'list'; data: OfferedModel[] }> {
  let entry = cache.get(baseUrl);
  if (!entry || Date.now() - entry.at > FRESH_MS) {
    const { models } = await listProviderModels({ provider: 'openrouter', baseUrl, apiKey: null }, call);
    entry = { at: Date.now(), models };
    cache.set(baseUrl, entry);
  }
  const needle = query.q?.trim().toLowerCase() ?? '';
  const hits = needle ? entry.models.filter((m) => m.id.toLowerCase().includes(needle) || (m.name ?? '').toLowerCase().includes(needle)) : entry.models;
  return { object: 'list', data: hits.slice(0, query.limit) };
}
