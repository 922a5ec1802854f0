// The oidc module: OAuth 2.1 and OpenID Connect server. Here: client management.
import type { ApiModule } from '../../app.ts';
import type { AppDeps } from '../../deps.ts';
import { oauthClientRoutes } from './clients/index.ts';

export async function loadOidc(deps: AppDeps): Promise<ApiModule> {
  return { name: 'oidc', routes: oauthClientRoutes(deps) };
}
