// What the integration services need besides the tenant scope: the caller (package access), the
// secret box, the egress policy and where this instance is reached from outside (connect links).
import type { IntegrationAuth, IntegrationManifest } from '../../../lib/afps/manifest-types.ts';
import type { EgressOptions } from '../../../lib/egress.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import { problem } from '../../../lib/problem.ts';
import type { RequestContext } from '../../context.ts';
import type { AppDeps } from '../../deps.ts';
import { packageScopeOf, type PackageScope } from '../packages/access.ts';
import { findPackage, listVersions, latestVersion, versionManifest } from '../packages/rows.ts';
import type { Queryable } from '../packages/store.ts';

export interface IntegrationDeps {
  secrets: SecretBox;
  egress: EgressOptions;
  /** the instance's public base URL, without a trailing slash */
  publicBase: string;
}

export function publicBaseOf(deps: Pick<AppDeps, 'config'>): string {
  const c = deps.config;
  return (c.PUBLIC_URL ?? c.INTERNAL_API_URL ?? `http://${c.HOST.includes(':') ? `[${c.HOST}]` : c.HOST}:${c.PORT}`).replace(/\/+$/, '');
}

export function integrationDepsOf(deps: AppDeps): IntegrationDeps {
  return {
    secrets: deps.secrets,
    egress: { allowInternalHosts: deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints: deps.platformEndpoints },
    publicBase: publicBaseOf(deps),
  };
}

export function integrationScopeOf(ctx: RequestContext, deps: AppDeps): PackageScope {
  return packageScopeOf(ctx, deps);
}

export interface UsableIntegration {
  id: string;
  version: string;
  manifest: IntegrationManifest;
}

/** An integration package living in, or placed and active in, the space, at its latest version. */
export async function integrationInSpace(q: Queryable, orgId: string, spaceId: string, id: string): Promise<UsableIntegration> {
  const pkg = await findPackage(q, orgId, spaceId, id);
  const usable = pkg && pkg.type === 'integration' && (pkg.homeSpaceId === spaceId || pkg.placedActive === true);
  if (!usable) throw problem('package_not_found', { detail: `No integration ${id} is usable in this space.` });
  const version = pkg.distTags.latest ?? latestVersion(await listVersions(q, orgId, id));
  if (!version) throw problem('package_not_found', { detail: `${id} has no published version.` });
  return { id, version, manifest: (await versionManifest(q, orgId, id, version)) as IntegrationManifest };
}

export function authOf(integration: UsableIntegration, authKey: string): IntegrationAuth {
  const auth = integration.manifest.auths?.[authKey];
  if (!auth) throw problem('not_found', { detail: `${integration.id} declares no auth "${authKey}".` });
  return auth;
}

/** Hosts an auth names literally: the only ones an internal address is allowed for. */
export function literalHosts(auth: IntegrationAuth): string[] {
  const hosts: string[] = [];
  for (const uri of auth.authorized_uris ?? []) {
    try {
      if (!uri.includes('{') && !uri.includes('*.')) hosts.push(new URL(uri.replace(/\*/g, 'x')).hostname.replace(/^\[|\]$/g, ''));
    } catch { /* not a URL once wildcards are filled: names no host */ }
  }
  return hosts;
}
