// Every route of OAuth client management: the client routes, dynamic registration (RFC 7591).
import type { AppDeps } from '../../../deps.ts';
import type { RouteDef } from '../../../route.ts';
import { clientRoutes } from './routes.ts';

export function oauthClientRoutes(_deps: AppDeps): RouteDef<any, any, any>[] {
  return [...clientRoutes()];
}
