// The core-providers module: model provider credentials and their pairing, the organization's
// models and its outbound proxies. The runs code resolves a run's model through resolve-model.ts.
import type { ApiModule } from '../../app.ts';
import type { AppDeps } from '../../deps.ts';
import { credentialRoutes } from './credential-routes.ts';
import { modelRoutes } from './model-routes.ts';
import { pairingRoutes } from './pairing-routes.ts';
import { proxyRoutes } from './proxy-routes.ts';

export { resolveRunModel, type RunModel } from './resolve-model.ts';
export { defaultProxyOf } from './proxies.ts';
export { checkModelSettings, type ModelCapabilities, type ModelSettings } from './model-settings.ts';

export async function loadCoreProviders(deps: AppDeps): Promise<ApiModule> {
  return { name: 'core-providers', routes: [...credentialRoutes(deps), ...pairingRoutes(deps), ...modelRoutes(deps), ...proxyRoutes(deps)] };
}
