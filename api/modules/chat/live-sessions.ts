// The chat engine's live sessions: a place for each session whose turn streams now, at most
// CHAT_MAX_LIVE_SESSIONS across every instance, held in the shared cache (Redis when REDIS_URL is
// set, process memory otherwise). A turn renews its place while it streams; a place its instance
// stopped renewing (the instance died) frees itself after LIVE_PLACE_TTL_MS.
import type { CacheStore } from '../../../lib/cache/store.ts';
import { problem } from '../../../lib/problem.ts';

const PLACES_KEY = 'chat:live-sessions';
export const LIVE_PLACE_TTL_MS = 60_000;
const RENEW_EVERY_MS = LIVE_PLACE_TTL_MS / 3;

export interface LivePlace {
  /** frees the place; once, however often it is called */
  release(): Promise<void>;
}

export interface LiveSessions {
  /** 409 chat_turn_in_progress when the session's turn streams (here or elsewhere); 429 chat_capacity at the cap */
  take(sessionId: string): Promise<LivePlace>;
}

export function liveSessions(cache: CacheStore, limit: number): LiveSessions {
  return {
    async take(sessionId) {
      const outcome = await cache.acquirePlace(PLACES_KEY, sessionId, limit, LIVE_PLACE_TTL_MS);
      if (outcome === 'held') throw problem('chat_turn_in_progress', { detail: 'A turn of this session is still streaming; wait for its done event.' });
      if (outcome === 'full') {
        throw problem('chat_capacity', { detail: `The chat engine holds its maximum of ${limit} live sessions; try again shortly.`, retryAfter: 5, headers: { 'Retry-After': '5' } });
      }
      const renewal = setInterval(() => void cache.renewPlace(PLACES_KEY, sessionId, LIVE_PLACE_TTL_MS).catch(() => false), RENEW_EVERY_MS);
      renewal.unref();
      let released: Promise<void> | undefined;
      return {
        release() {
          if (!released) {
            clearInterval(renewal);
            // a cache that cannot be reached leaves the place to expire
            released = cache.releasePlace(PLACES_KEY, sessionId).catch(() => undefined);
          }
          return released;
        },
      };
    },
  };
}
