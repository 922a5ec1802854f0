// Skills in chat. A space's admin enforces skills: the SKILL.md of each one's latest published
// version goes into the system prompt of every chat of the space. A member may also inject a
// skill's draft into one session, to try it; the session notes the draft's integrity and refuses
// a later turn once the draft changed (409 injected_draft_changed).
import semver from 'semver';
import type { Config } from '../../../lib/config.ts';
import { isProblem, problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { requirePackageInSpace } from '../../services/packages/placement.ts';
import { readTree } from '../../services/packages/store.ts';
import type { PackageRow } from '../../services/packages/rows.ts';
import { inTransaction } from '../../../db/transaction.ts';

const SKILL_FILE = 'SKILL.md';

export interface SkillText {
  packageId: string;
  /** the published version, or null for an injected draft */
  version: string | null;
  content: string;
}

export interface EnforcedSkill {
  packageId: string;
  position: number;
  createdAt: string;
}

/** The highest available version: the latest dist-tag when it is not yanked, else the highest stable one. */
async function latestVersion(scope: SpaceScope, pkg: PackageRow): Promise<string | null> {
  const { rows } = await scope.pool.query<{ version: string }>(
    'SELECT version FROM package_versions WHERE org_id = $1 AND package_id = $2 AND NOT yanked',
    [scope.orgId, pkg.id],
  );
  const versions = rows.map((r) => r.version);
  const tagged = pkg.distTags?.latest;
  if (tagged && versions.includes(tagged)) return tagged;
  const stable = versions.filter((v) => !semver.prerelease(v));
  return semver.rsort(stable.length ? stable : versions)[0] ?? null;
}

async function skillFile(scope: SpaceScope, packageId: string, version: string | null): Promise<string | null> {
  const files = await readTree(scope.pool, scope.orgId, packageId, version, SKILL_FILE);
  return files.get(SKILL_FILE)?.toString('utf8') ?? null;
}

/** A package reachable in the space, whatever the reason it is not: not_found. */
async function reachable(scope: SpaceScope, packageId: string): Promise<PackageRow> {
  try {
    return await requirePackageInSpace(scope, packageId);
  } catch (err) {
    if (isProblem(err) && ['package_not_found', 'package_not_placed', 'package_not_active_in_space'].includes(err.code)) {
      throw problem('not_found', { detail: `No package ${packageId} is reachable in this space.` });
    }
    throw err;
  }
}

export async function listEnforcedSkills(scope: SpaceScope): Promise<EnforcedSkill[]> {
  const { rows } = await scope.pool.query<{ package_id: string; position: number; created_at: Date }>(
    'SELECT package_id, position, created_at FROM chat_enforced_skills WHERE org_id = $1 AND space_id = $2 ORDER BY position',
    [scope.orgId, scope.spaceId],
  );
  return rows.map((r) => ({ packageId: r.package_id, position: r.position, createdAt: r.created_at.toISOString() }));
}

/**
 * Replaces the space's enforced skills. 409 enforced_skills_limit past the maximum, 400
 * chat_enforced_not_skill for another package type, 409 no_published_version for a skill never
 * published, 409 enforced_skills_budget when their SKILL.md files together pass the budget.
 */
export async function setEnforcedSkills(scope: SpaceScope, config: Config, packageIds: string[]): Promise<EnforcedSkill[]> {
  const ids = [...new Set(packageIds)];
  if (ids.length > config.CHAT_ENFORCED_SKILLS_MAX) {
    throw problem('enforced_skills_limit', { detail: `A space enforces at most ${config.CHAT_ENFORCED_SKILLS_MAX} skills in its chats; ${ids.length} were given.` });
  }
  let bytes = 0;
  for (const id of ids) {
    const pkg = await reachable(scope, id);
    if (pkg.type !== 'skill') throw problem('chat_enforced_not_skill', { detail: `${id} is a package of type ${pkg.type}; only a skill can be enforced in a space's chat.` });
    const version = await latestVersion(scope, pkg);
    if (!version) throw problem('no_published_version', { status: 409, detail: `${id} has never been published (or every version is yanked); publish it before enforcing it.` });
    const content = await skillFile(scope, id, version);
    bytes += Buffer.byteLength(content ?? '');
  }
  if (bytes > config.CHAT_ENFORCED_SKILLS_BUDGET_BYTES) {
    throw problem('enforced_skills_budget', { detail: `The enforced skills hold ${bytes} bytes of SKILL.md; the budget is ${config.CHAT_ENFORCED_SKILLS_BUDGET_BYTES}.` });
  }
  await inTransaction(scope.pool, async (client) => {
    await client.query('DELETE FROM chat_enforced_skills WHERE org_id = $1 AND space_id = $2', [scope.orgId, scope.spaceId]);
    for (const [position, id] of ids.entries()) {
      await client.query(
        'INSERT INTO chat_enforced_skills (org_id, space_id, package_id, position, created_by) VALUES ($1, $2, $3, $4, $5)',
        [scope.orgId, scope.spaceId, id, position, scope.actor.userId],
      );
    }
  });
  return listEnforcedSkills(scope);
}

/** The enforced skills' texts for a turn; 503 enforced_skills_unavailable when one cannot be loaded. */
export async function loadEnforcedSkills(scope: SpaceScope): Promise<SkillText[]> {
  const enforced = await listEnforcedSkills(scope);
  const out: SkillText[] = [];
  for (const e of enforced) {
    const unavailable = (why: string) => problem('enforced_skills_unavailable', { detail: `The enforced skill ${e.packageId} could not be loaded: ${why}.` });
    let pkg: PackageRow;
    try {
      pkg = await reachable(scope, e.packageId);
    } catch (err) {
      if (isProblem(err) && err.code === 'not_found') throw unavailable('it is no longer reachable in this space');
      throw err;
    }
    const version = await latestVersion(scope, pkg);
    if (!version) throw unavailable('no published version is available');
    let content: string | null;
    try {
      content = await skillFile(scope, pkg.id, version);
    } catch (err) {
      if (isProblem(err)) throw unavailable('its stored content is unreadable');
      throw err;
    }
    if (content === null) throw unavailable(`version ${version} has no ${SKILL_FILE}`);
    out.push({ packageId: pkg.id, version, content });
  }
  return out;
}

export interface InjectedDraft {
  packageId: string;
  integrity: string;
}

/** Notes the drafts a new session injects: each a skill reachable in the space. */
export async function noteInjectedDrafts(scope: SpaceScope, packageIds: string[]): Promise<InjectedDraft[]> {
  const out: InjectedDraft[] = [];
  for (const [i, id] of [...new Set(packageIds)].entries()) {
    const pkg = await reachable(scope, id);
    if (pkg.type !== 'skill') {
      throw problem('validation_failed', { errors: [{ field: `draft_skills[${i}]`, code: 'invalid_value', message: `${id} is not a skill.` }] });
    }
    out.push({ packageId: id, integrity: pkg.draftIntegrity });
  }
  return out;
}

/** The injected drafts' texts for a turn; 409 injected_draft_changed when one changed since. */
export async function loadInjectedDrafts(scope: SpaceScope, injected: InjectedDraft[]): Promise<SkillText[]> {
  const out: SkillText[] = [];
  for (const d of injected) {
    let pkg: PackageRow;
    try {
      pkg = await reachable(scope, d.packageId);
    } catch (err) {
      if (isProblem(err) && err.code === 'not_found') throw problem('injected_draft_changed', { detail: `The injected skill ${d.packageId} is gone; start a new session.` });
      throw err;
    }
    if (pkg.draftIntegrity !== d.integrity) {
      throw problem('injected_draft_changed', { detail: `The draft of ${d.packageId} changed since it was injected into this session; start a new session to use the new draft.` });
    }
    const source = pkg.draftDetached || !pkg.draftBaseVersion ? null : pkg.draftBaseVersion;
    const content = await skillFile(scope, pkg.id, source);
    out.push({ packageId: pkg.id, version: null, content: content ?? '' });
  }
  return out;
}
