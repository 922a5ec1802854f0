// Tenant scopes: every service function takes one as its first argument, and queries of tenant
// resources filter by its organization (and space), so a forgotten tenant filter has no scope to use.
import type pg from 'pg';
import type { Db } from './client.ts';

export interface Actor {
  /** the person acting, or on whose authority an API key acts */
  userId: string;
  apiKeyId?: string;
  /** set when an API key acts on behalf of an end-user */
  endUserId?: string;
}

export interface OrgScope {
  pool: pg.Pool;
  db: Db;
  orgId: string;
  actor: Actor;
}

export interface SpaceScope extends OrgScope {
  spaceId: string;
}

interface ScopeSource {
  principal?: { userId: string; apiKeyId?: string };
  org?: { id: string };
  space?: { id: string };
  endUserId?: string;
}

function actorOf(ctx: ScopeSource): Actor {
  if (!ctx.principal) throw new Error('scope requested for an unauthenticated request');
  return { userId: ctx.principal.userId, apiKeyId: ctx.principal.apiKeyId, endUserId: ctx.endUserId };
}

export function orgScopeOf(ctx: ScopeSource, database: { pool: pg.Pool; db: Db }): OrgScope {
  if (!ctx.org) throw new Error('org scope requested on a route without organization context');
  return { pool: database.pool, db: database.db, orgId: ctx.org.id, actor: actorOf(ctx) };
}

export function spaceScopeOf(ctx: ScopeSource, database: { pool: pg.Pool; db: Db }): SpaceScope {
  if (!ctx.space) throw new Error('space scope requested on a route without space context');
  return { ...orgScopeOf(ctx, database), spaceId: ctx.space.id };
}
