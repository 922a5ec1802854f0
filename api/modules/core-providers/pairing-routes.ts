// Model-provider pairing (organization-level): a member with models:write starts one and gets a
// one-time token; a tool holding the provider key redeems it, with no other credential, into a
// credential of the organization (pairings.ts).
import { orgScopeOf } from '../../../db/tenant.ts';
import type { AppDeps } from '../../deps.ts';
import { created, ok, route } from '../../route.ts';
import { providersDepsOf } from './module-deps.ts';
import * as pairings from './pairings.ts';
import { Credential, IdParams, PairBody, Pairing, PairingStarted } from './wire.ts';

const TAG = 'Model providers';
// the redemption is anonymous: the token is its only credential, so guesses are limited per client IP
const REDEEM_LIMIT = { perMinute: 10, by: 'ip' as const };

export function pairingRoutes(deps: AppDeps) {
  const pdeps = providersDepsOf(deps);
  return [
    route({
      method: 'post', path: '/api/model-provider-pairings', summary: 'Start a pairing: a one-time token a tool holding the provider key redeems', tag: TAG, tenant: 'org',
      location: (b) => `/api/model-provider-pairings/${b.id}`,
      permission: 'models:write',
      responses: { 201: { description: 'The pairing and its token, shown this once', schema: PairingStarted } },
      // the answer holds the token: no cache keeps it
      handler: async ({ ctx }) => created(await pairings.startPairing(orgScopeOf(ctx, deps.database), deps.config.MODEL_PAIRING_TTL_SECONDS), { 'Cache-Control': 'no-store' }),
    }),
    route({
      method: 'get', path: '/api/model-provider-pairings/{id}', summary: 'Read a pairing: pending, consumed (with the credential created) or expired', tag: TAG, tenant: 'org',
      permission: 'models:read', params: IdParams,
      responses: { 200: { description: 'The pairing, never its token', schema: Pairing } },
      handler: async ({ ctx, params }) => ok(await pairings.getPairing(orgScopeOf(ctx, deps.database), params.id)),
    }),
    route({
      method: 'post', path: '/api/model-provider-pairings/redeem', summary: 'Redeem a pairing token: create the credential on behalf of the member who started the pairing', tag: TAG,
      stage: 'auth', tenant: 'none', rateLimit: REDEEM_LIMIT, body: PairBody,
      location: (b) => `/api/model-provider-credentials/${b.id}`,
      responses: {
        201: { description: 'The credential, without its key; the token is consumed', schema: Credential },
        400: { description: 'validation_failed; blocked_url: the base URL names an internal address' },
        401: { description: 'unauthorized: the token is not valid' },
        403: { description: 'forbidden: the member who started the pairing may no longer add credentials' },
        409: { description: 'model_provider_unregistered; org_deleting' },
        410: { description: 'pairing_expired_or_consumed' },
      },
      handler: async ({ body }) => created(await pairings.redeemPairing(deps.database.pool, pdeps, body)),
    }),
  ];
}
