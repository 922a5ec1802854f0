// What an agent needs to run in a space: its version and files, and the skills, integrations
// (and the MCP-server packages local integrations start) it declares, each resolved by semver
// range among the versions of packages living in or placed (and active) in that space.
import type { AgentManifest, IntegrationManifest, Manifest, PackageType } from '../../../lib/afps/index.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { findPackage, listVersions, resolveStored, versionManifest, type PackageRow, type VersionRow } from './rows.ts';
import { entriesOf, readTree, treeIntegrityOf, type Queryable } from './store.ts';

export interface RunnablePackage {
  id: string;
  version: string;
  integrity: string;
  manifest: Manifest;
  files: Map<string, Buffer>;
}

export interface RunnableAgent {
  packageId: string;
  version: string;
  integrity: string;
  manifest: AgentManifest;
  files: Map<string, Buffer>;
  skills: RunnablePackage[];
  integrations: RunnablePackage[];
  /** mcp-server packages that local integrations start */
  mcpServers: RunnablePackage[];
}

/** Ids of live packages whose latest version depends on `id`. */
export async function dependentsOf(q: Queryable, orgId: string, id: string): Promise<string[]> {
  const { rows } = await q.query(
    `SELECT p.id
       FROM packages p
       JOIN package_versions v ON v.org_id = p.org_id AND v.package_id = p.id AND v.version = p.dist_tags->>'latest'
      WHERE p.org_id = $1 AND p.deleted_at IS NULL AND p.id <> $2
        AND (v.manifest->'dependencies'->'skills' ? $2 OR v.manifest->'dependencies'->'integrations' ? $2
             OR v.manifest->'source'->'server'->>'name' = $2)
      ORDER BY p.id LIMIT 10`,
    [orgId, id],
  );
  return rows.map((r) => r.id as string);
}

// Published versions never change: a loaded one is kept (keyed by its integrity too, so a
// deleted and re-imported package id never serves stale files), bounded by total size.
const VERSION_CACHE_BYTES = 64 * 1024 * 1024;
const versionCache = new Map<string, { pkg: RunnablePackage; bytes: number }>();
let versionCacheBytes = 0;

function remember(key: string, pkg: RunnablePackage): void {
  let bytes = 0;
  for (const f of pkg.files.values()) bytes += f.length;
  if (bytes > VERSION_CACHE_BYTES / 4) return;
  while (versionCacheBytes + bytes > VERSION_CACHE_BYTES && versionCache.size) {
    const [oldest, entry] = versionCache.entries().next().value!;
    versionCache.delete(oldest);
    versionCacheBytes -= entry.bytes;
  }
  versionCache.set(key, { pkg, bytes });
  versionCacheBytes += bytes;
}

async function loadVersion(scope: SpaceScope, id: string, version: string, integrity: string): Promise<RunnablePackage> {
  const key = `${scope.orgId}\0${id}\0${version}\0${integrity}`;
  const hit = versionCache.get(key);
  if (hit) return hit.pkg;
  const [manifest, files] = await Promise.all([
    versionManifest(scope.pool, scope.orgId, id, version),
    readTree(scope.pool, scope.orgId, id, version),
  ]);
  // The files must still be the ones whose integrity was recorded at publish.
  if (treeIntegrityOf(entriesOf(files)) !== integrity) {
    throw problem('bundle_integrity_mismatch', { detail: `The stored files of ${id}@${version} no longer match their recorded integrity.` });
  }
  const pkg = { id, version, integrity, manifest, files };
  remember(key, pkg);
  return pkg;
}

type DependencyKind = 'skills' | 'integrations' | 'server';

const EXPECTED_TYPE: Record<DependencyKind, PackageType> = { skills: 'skill', integrations: 'integration', server: 'mcp-server' };

/** A declared dependency among the packages usable in the space. */
async function resolveDependency(scope: SpaceScope, owner: string, kind: DependencyKind, id: string, range: string): Promise<RunnablePackage> {
  const field = kind === 'server' ? 'source.server' : `dependencies.${kind}.${id}`;
  const [pkg, versions] = await Promise.all([findPackage(scope.pool, scope.orgId, scope.spaceId, id), listVersions(scope.pool, scope.orgId, id)]);
  const usable = pkg && pkg.type === EXPECTED_TYPE[kind] && (pkg.homeSpaceId === scope.spaceId || pkg.placedActive === true);
  if (!usable) {
    const detail = `${owner} needs ${id}, which is not available in this space.`;
    if (kind === 'skills') throw problem('missing_skill', { detail, errors: [{ field, code: 'invalid_value', message: 'is not available in this space', packageId: id }] });
    throw problem('dependency_unresolved', { detail, errors: [{ field, code: 'invalid_value', message: 'is not available in this space', packageId: id }] });
  }
  try {
    const chosen = resolveStored(id, versions, pkg.distTags, range);
    return await loadVersion(scope, id, chosen.version, chosen.integrity);
  } catch (err) {
    if ((err as { code?: string }).code !== 'version_not_found' && (err as { code?: string }).code !== 'version_yanked') throw err;
    throw problem('dependency_unresolved', {
      detail: `No usable version of ${id} satisfies ${range} (declared by ${owner}); pin another range.`,
      errors: [{ field, code: 'invalid_value', message: `no version satisfies ${range}`, packageId: id }],
    });
  }
}

/**
 * The agent package `packageId` as the scope's space sees it: agent_not_found (404) when no agent
 * with that id lives or is placed there, not_an_agent (400) for another package type,
 * agent_not_active_in_space (404) when placed but switched off. With its published versions.
 */
export async function findRunnableAgentPackage(scope: SpaceScope, packageId: string): Promise<{ pkg: PackageRow; versions: VersionRow[] }> {
  // the package and its versions in parallel: one round trip's wait instead of two
  const [pkg, versions] = await Promise.all([
    findPackage(scope.pool, scope.orgId, scope.spaceId, packageId),
    listVersions(scope.pool, scope.orgId, packageId),
  ]);
  const here = pkg && (pkg.homeSpaceId === scope.spaceId || pkg.placedActive !== null);
  if (!pkg || !here) throw problem('agent_not_found', { detail: `No agent ${packageId} is reachable in this space.` });
  if (pkg.type !== 'agent') throw problem('not_an_agent', { detail: `${packageId} is a ${pkg.type} package.` });
  if (pkg.homeSpaceId !== scope.spaceId && pkg.placedActive === false) {
    throw problem('agent_not_active_in_space', { detail: `${packageId} is switched off in this space.` });
  }
  return { pkg, versions };
}

/**
 * The skills, integrations (and the MCP-server packages local integrations start) an agent
 * manifest declares, resolved in the space (missing_skill 400, dependency_unresolved 422).
 */
export async function resolveAgentDependencies(scope: SpaceScope, owner: string, manifest: AgentManifest): Promise<Pick<RunnableAgent, 'skills' | 'integrations' | 'mcpServers'>> {
  const skills = await Promise.all(Object.entries(manifest.dependencies?.skills ?? {}).map(([id, range]) => resolveDependency(scope, owner, 'skills', id, range)));
  return { skills, ...(await resolveAgentIntegrations(scope, owner, manifest)) };
}

/** The integrations an agent manifest declares, and the MCP-server packages its local ones start, resolved in the space. */
export async function resolveAgentIntegrations(scope: SpaceScope, owner: string, manifest: AgentManifest): Promise<Pick<RunnableAgent, 'integrations' | 'mcpServers'>> {
  const integrations = await Promise.all(Object.entries(manifest.dependencies?.integrations ?? {}).map(([id, range]) => resolveDependency(scope, owner, 'integrations', id, range)));
  const mcpServers: RunnablePackage[] = [];
  for (const integration of integrations) {
    const source = (integration.manifest as IntegrationManifest).source;
    if (source.kind === 'local' && 'server' in source && !mcpServers.some((s) => s.id === source.server.name)) {
      mcpServers.push(await resolveDependency(scope, `${integration.id}@${integration.version}`, 'server', source.server.name, source.server.version));
    }
  }
  return { integrations, mcpServers };
}

/**
 * The agent `packageId` as it runs in the scope's space (see findRunnableAgentPackage);
 * no_published_version (404) before its first version (its draft runs with source: draft); then
 * the version the spec (exact, dist-tag or range; default latest) names, and its dependencies.
 */
export async function resolveRunnableAgent(scope: SpaceScope, packageId: string, versionSpec?: string): Promise<RunnableAgent> {
  const { pkg, versions } = await findRunnableAgentPackage(scope, packageId);
  if (versions.length === 0) {
    throw problem('no_published_version', { detail: `${packageId} has no published version; publish it, or launch its draft with source: draft.` });
  }
  const chosen = resolveStored(packageId, versions, pkg.distTags, versionSpec ?? 'latest');
  const agent = await loadVersion(scope, packageId, chosen.version, chosen.integrity);
  const manifest = agent.manifest as AgentManifest;
  const dependencies = await resolveAgentDependencies(scope, `${packageId}@${chosen.version}`, manifest);
  return { packageId, version: chosen.version, integrity: chosen.integrity, manifest, files: agent.files, ...dependencies };
}

/** Published versions pinned earlier (exact version and integrity), loaded as they were stored. */
export async function loadPinnedVersions(scope: SpaceScope, pins: Array<{ id: string; version: string; integrity: string }>): Promise<RunnablePackage[]> {
  return Promise.all(pins.map(async (pin) => {
    const { rows } = await scope.pool.query('SELECT integrity FROM package_versions WHERE org_id = $1 AND package_id = $2 AND version = $3', [scope.orgId, pin.id, pin.version]);
    if (rows[0]?.integrity !== pin.integrity) throw problem('dependency_unresolved', { detail: `${pin.id}@${pin.version} is no longer the version pinned at launch.` });
    return loadVersion(scope, pin.id, pin.version, pin.integrity);
  }));
}

/** The skills a manifest that is not a stored package declares (inline runs), resolved in the space. */
export async function resolveDeclaredSkills(scope: SpaceScope, owner: string, skills: Record<string, string>): Promise<RunnablePackage[]> {
  return Promise.all(Object.entries(skills).map(([id, range]) => resolveDependency(scope, owner, 'skills', id, range)));
}
