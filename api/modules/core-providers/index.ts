// The core-providers module: model provider credentials and the organization's models. The runs
// code resolves a run's model through resolve-model.ts.
import type { ApiModule } from '../../app.ts';
import type { AppDeps } from '../../deps.ts';
import { credentialRoutes } from './credential-routes.ts';
import { modelRoutes } from './model-routes.ts';

export { resolveRunModel, type RunModel } from './resolve-model.ts';
export { checkModelSettings, type ModelCapabilities, type ModelSettings } from './model-settings.ts';

export async function loadCoreProviders(deps: AppDeps): Promise<ApiModule> {
  return { name: 'core-providers', routes: [...credentialRoutes(deps), ...modelRoutes(deps)] };
}
