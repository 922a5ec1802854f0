// What a stream's caller may see, re-resolved from the credential it connected with whenever
// identity data changes (a revoked key, a lost role, a removed member): the answer replaces the
// stream's permissions, or ends the stream when the credential no longer works.
import type pg from 'pg';
import { sha256Hex } from '../../../lib/crypto.ts';
import type { Permission } from '../../../lib/permissions.ts';
import type { Request } from '../../http.ts';
import { readCookie } from '../../middleware/authenticate.ts';
import { resolveViewAs } from '../../middleware/view-as.ts';
import { computePermissions, loadApiKeyFacts, loadSessionFacts } from '../access.ts';

export interface StreamAccess {
  credentialKey: string;
  recheck: () => Promise<ReadonlySet<Permission> | null>;
}

function apiKeyOf(req: Request): string | undefined {
  const m = /^Bearer\s+(apst_\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (m) return m[1];
  return typeof req.query.token === 'string' ? req.query.token : undefined;
}

/** The re-check for the credential this (authenticated) request carried. */
export function streamAccess(req: Request, pool: pg.Pool, cookieName: string): StreamAccess {
  const ctx = req.ctx;
  const principal = ctx.principal!;
  const current = ctx.permissions;
  if (principal.kind === 'api_key') {
    const hash = sha256Hex(apiKeyOf(req) ?? '');
    return {
      credentialKey: `k:${hash}`,
      async recheck() {
        const facts = await loadApiKeyFacts(pool, hash);
        if (!facts || facts.revokedAt || (facts.expiresAt && facts.expiresAt.getTime() <= Date.now()) || !facts.orgRole || facts.orgDeleting) return null;
        const scopes = new Set(facts.scopes);
        const held = computePermissions(facts, facts.createdBy).permissions;
        return new Set([...held].filter((p) => scopes.has(p)));
      },
    };
  }
  if (principal.kind === 'session') {
    const hash = sha256Hex(readCookie(req, cookieName) ?? '');
    const orgId = ctx.org!.id;
    const spaceId = ctx.space!.id;
    const preview = ctx.viewAs;
    return {
      credentialKey: `s:${hash}:${orgId}:${spaceId}:${preview ?? ''}`,
      async recheck() {
        const facts = await loadSessionFacts(pool, hash, orgId, spaceId);
        if (!facts || facts.expiresAt.getTime() <= Date.now() || facts.realm !== 'platform' || !facts.orgRole || !facts.orgId) return null;
        let viewAs;
        if (preview) {
          // the preview is judged again against the caller's role now (an admin demoted loses it)
          const asked = { query: { view_as: preview }, headers: {}, ctx: {} } as unknown as Request;
          try {
            viewAs = await resolveViewAs(asked, facts.orgRole, pool, orgId, true);
          } catch {
            return null;
          }
        }
        const { permissions, spaceMember } = computePermissions(facts, facts.userId, viewAs);
        return spaceMember ? permissions : null;
      },
    };
  }
  // credentials resolved by a module (OIDC tokens) keep what they were granted until they expire
  return { credentialKey: `p:${principal.userId}`, recheck: async () => current };
}
