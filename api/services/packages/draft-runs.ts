// Running an agent's draft before it is published (launch with source: draft). The launch takes a
// snapshot of the draft: its tree integrity (the content hash the run records), its normalized
// manifest, its file listing (paths → content-addressed blob digests, which never change) and the
// exact skill versions its ranges resolved to. The run executes that snapshot, never a later edit.
import { MANIFEST_FILE, type AgentManifest } from '../../../lib/afps/index.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { holds, packagePermission, type PackageScope } from './access.ts';
import { findRunnableAgentPackage, loadPinnedVersions, resolveAgentDependencies, type RunnablePackage } from './dependencies.ts';
import { checkDraftManifest } from './drafts.ts';
import { draftSource } from './rows.ts';
import { listTree, readEntries, treeIntegrityOf, type TreeEntry } from './store.ts';

/** What a draft run executes, stored with the run. */
export interface DraftSnapshot {
  /** tree integrity of the draft's files at launch (sha256-<base64>) */
  integrity: string;
  manifest: AgentManifest;
  files: TreeEntry[];
  skills: Array<{ id: string; version: string; integrity: string }>;
}

export interface DraftAgent {
  packageId: string;
  /** the version the draft manifest declares (not necessarily published) */
  version: string;
  manifest: AgentManifest;
  files: Map<string, Buffer>;
  /** the integrations the draft declares, resolved in the space (their connections are checked at launch) */
  integrations: RunnablePackage[];
  snapshot: DraftSnapshot;
}

/**
 * The draft of the agent `packageId` as it is now, for a run in the scope's space: the agent
 * checks of a published launch (agent_not_found, not_an_agent, agent_not_active_in_space), then
 * draft_not_writable (403) without agents:write in its home space, invalid_draft_manifest (400),
 * and its dependencies resolved in the space (missing_skill, dependency_unresolved).
 */
export async function resolveDraftAgent(scope: PackageScope, packageId: string): Promise<DraftAgent> {
  const { pkg } = await findRunnableAgentPackage(scope, packageId);
  const write = packagePermission(pkg.type, 'write');
  if (!(await holds(scope, pkg.homeSpaceId, write))) {
    throw problem('draft_not_writable', { detail: `Running the draft of ${packageId} needs ${write} in its home space; run a published version instead.` });
  }
  const entries = (await listTree(scope.pool, scope.orgId, packageId, draftSource(pkg))).map((e) => ({ path: e.path, digest: e.digest, size: Number(e.size) }));
  const files = await readEntries(scope.pool, scope.orgId, entries);
  let raw: unknown = null;
  try {
    raw = JSON.parse(files.get(MANIFEST_FILE)?.toString('utf8') ?? 'null');
  } catch {
    // not JSON: refused as not an object below
  }
  const manifest = checkDraftManifest(scope, pkg, raw) as AgentManifest;
  const { skills, integrations } = await resolveAgentDependencies(scope, `${packageId} (draft)`, manifest);
  return {
    packageId,
    version: manifest.version,
    manifest,
    files,
    integrations,
    snapshot: {
      integrity: treeIntegrityOf(entries),
      manifest,
      files: entries,
      skills: skills.map((s) => ({ id: s.id, version: s.version, integrity: s.integrity })),
    },
  };
}

/** The files and pinned skills of a draft snapshot, as they were at launch. */
export async function loadDraftSnapshot(scope: SpaceScope, snapshot: DraftSnapshot): Promise<{ manifest: AgentManifest; files: Map<string, Buffer>; skills: RunnablePackage[] }> {
  if (treeIntegrityOf(snapshot.files) !== snapshot.integrity) {
    throw problem('version_artifact_unavailable', { detail: 'The draft snapshot of this run does not match its recorded integrity.' });
  }
  const [files, skills] = await Promise.all([
    readEntries(scope.pool, scope.orgId, snapshot.files),
    loadPinnedVersions(scope, snapshot.skills),
  ]);
  return { manifest: snapshot.manifest, files, skills };
}
