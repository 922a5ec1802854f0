// The integrations usable in a space (living there, or placed and active), with their auths
// (never a secret), tools and the caller's connections per auth. Offset-paged by package id.
import type { IntegrationManifest } from '../../../lib/afps/manifest-types.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import type { OffsetPage } from '../../lists.ts';
import { listVisibleConnections, toConnectionWire, type ConnectionWire } from './connections.ts';

export interface IntegrationAuthWire {
  key: string;
  type: string;
  credentials_schema: Record<string, unknown> | null;
  scopes: string[];
  login: boolean;
  connections: ConnectionWire[];
}

export interface IntegrationWire {
  packageId: string;
  object: 'integration';
  display_name: string | null;
  description: string | null;
  version: string;
  source_kind: 'none' | 'local' | 'remote';
  placement: 'home' | 'placed';
  tools: string[];
  auths: IntegrationAuthWire[];
}

export async function listIntegrations(scope: SpaceScope, page: OffsetPage): Promise<{ rows: IntegrationWire[]; total: number }> {
  const { rows } = await scope.pool.query<{ id: string; home: boolean; manifest: IntegrationManifest; version: string; total: number }>(
    `SELECT p.id, p.home_space_id = $2 AS home, v.manifest, v.version, count(*) OVER () ::int AS total
       FROM packages p
       JOIN package_versions v ON v.org_id = p.org_id AND v.package_id = p.id AND v.version = p.dist_tags->>'latest'
      WHERE p.org_id = $1 AND p.type = 'integration' AND p.deleted_at IS NULL
        AND (p.home_space_id = $2 OR EXISTS (SELECT 1 FROM package_placements pl WHERE pl.org_id = p.org_id AND pl.package_id = p.id AND pl.space_id = $2 AND pl.active))
      ORDER BY p.id COLLATE "C" LIMIT $3 OFFSET $4`,
    [scope.orgId, scope.spaceId, page.limit + 1, page.offset],
  );
  const out: IntegrationWire[] = [];
  for (const r of rows) {
    const connections = r === rows[page.limit] ? [] : await listVisibleConnections(scope, { integrationId: r.id });
    const m = r.manifest;
    out.push({
      packageId: r.id,
      object: 'integration',
      display_name: m.display_name ?? null,
      description: m.description ?? null,
      version: r.version,
      source_kind: m.source.kind,
      placement: r.home ? 'home' : 'placed',
      tools: m.default_tools ?? [],
      auths: Object.entries(m.auths ?? {}).map(([key, auth]) => ({
        key,
        type: auth.type,
        credentials_schema: auth.credentials?.schema ?? null,
        scopes: auth.oauth2?.scopes ?? [],
        login: auth.connect?.login !== undefined,
        connections: connections.filter((c) => c.auth_key === key).map((c) => toConnectionWire(c, scope.actor)),
      })),
    });
  }
  return { rows: out, total: rows[0]?.total ?? 0 };
}
