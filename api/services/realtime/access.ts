// What a stream's caller may see, re-resolved from the credential it connected with whenever
// identity data changes (a revoked key, a lost role, a removed member): the answer replaces the
// stream's permissions, or ends the stream when the credential no longer works.
import type pg from 'pg';
import { sha256Hex } from '../../../lib/crypto.ts';
import type { Permission } from '../../../lib/permissions.ts';
import type { Request } from '../../http.ts';
import { readCookie } from '../../middleware/authenticate.ts';
import { resolveViewAs } from '../../middleware/view-as.ts';
import { computePermissions, loadApiKeyFacts, loadPersonMembership, loadSessionFacts } from '../access.ts';
import { withinCeiling } from '../../../lib/permissions.ts';

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
  if (principal.kind === 'oidc' && principal.grantId) {
    // an OAuth token: its grant must live (revocation, a password change), and the person keep a
    // role in the space (an end-user: still exist there); what it holds is cut to the same ceiling
    const orgId = ctx.org!.id;
    const spaceId = ctx.space!.id;
    const grantId = principal.grantId;
    const endUser = principal.oauthLevel === 'space';
    const ceiling = principal.ceiling;
    return {
      credentialKey: `o:${grantId}:${principal.userId}:${orgId}:${spaceId}`,
      async recheck() {
        const { rows } = await pool.query(
          `SELECT EXISTS (SELECT 1 FROM oidc_payloads g WHERE g.model = 'Grant' AND g.id = $1 AND (g.expires_at IS NULL OR g.expires_at > now())) AS live`,
          [grantId],
        );
        if (!rows[0]?.live) return null;
        if (endUser) {
          const found = await pool.query('SELECT 1 FROM end_users WHERE id = $1 AND org_id = $2 AND space_id = $3', [principal.userId, orgId, spaceId]);
          return found.rowCount ? current : null;
        }
        const facts = await loadPersonMembership(pool, principal.userId, orgId, spaceId);
        if (!facts || !facts.orgRole) return null;
        const { permissions, spaceMember } = computePermissions(facts, principal.userId);
        return spaceMember ? withinCeiling(permissions, ceiling) : null;
      },
    };
  }
  // a credential no recheck is known for keeps what it was granted
  return { credentialKey: `p:${principal.userId}`, recheck: async () => current };
}
