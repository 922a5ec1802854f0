// Live search of OpenRouter's public model catalog, to pick a model id before adding it. The
// catalog is read without a key and kept for a few minutes per process.
import type { ProvidersDeps } from './module-deps.ts';
import { listProviderModels, type OfferedModel } from './provider-client.ts';
import { providerAdapter } from './providers.ts';

const FRESH_MS = 10 * 60_000;
const cache = new Map<string, { at: number; models: OfferedModel[] }>();

export const OPENROUTER_BASE_URL = providerAdapter('openrouter')!.defaultBaseUrl!;

/** Models whose id or name contains `q` (case-insensitive), at most `limit`. */
export async function searchOpenRouterModels(
  pdeps: ProvidersDeps,
  query: { q?: string; limit: number },
  baseUrl: string = OPENROUTER_BASE_URL,
): Promise<{ object: 'list'; data: OfferedModel[] }> {
  let entry = cache.get(baseUrl);
  if (!entry || Date.now() - entry.at > FRESH_MS) {
    const { models } = await listProviderModels({ provider: 'openrouter', baseUrl, apiKey: null }, { egress: pdeps.egress });
    entry = { at: Date.now(), models };
    cache.set(baseUrl, entry);
  }
  const needle = query.q?.trim().toLowerCase() ?? '';
  const hits = needle ? entry.models.filter((m) => m.id.toLowerCase().includes(needle) || (m.name ?? '').toLowerCase().includes(needle)) : entry.models;
  return { object: 'list', data: hits.slice(0, query.limit) };
}
