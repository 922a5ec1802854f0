// Optional modules, loaded from the MODULES setting.
import type { ApiModule } from '../app.ts';
import type { AppDeps } from '../deps.ts';
import type { ModuleName } from '../../lib/config.ts';
import { loadCoreProviders } from './core-providers/index.ts';
import { loadMcp } from './mcp/index.ts';
import { loadOidc } from './oidc/index.ts';
import { loadWebhooks } from './webhooks/index.ts';

type ModuleLoader = (deps: AppDeps) => Promise<ApiModule>;

/** Modules this build ships; a configured name without a loader here loads nothing. */
const LOADERS: Partial<Record<ModuleName, ModuleLoader>> = {
  'core-providers': loadCoreProviders,
  mcp: loadMcp,
  oidc: loadOidc,
  webhooks: loadWebhooks,
};

export async function loadModules(names: readonly ModuleName[], deps: AppDeps): Promise<ApiModule[]> {
  const out: ApiModule[] = [];
  for (const name of names) {
    const load = LOADERS[name];
    if (load) out.push(await load(deps));
    else deps.log.warn('configured module is not available in this build; skipped', { module: name });
  }
  return out;
}
