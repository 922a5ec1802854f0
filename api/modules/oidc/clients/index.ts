// Everything the client side of the oidc module adds: the client routes, dynamic registration
// (RFC 7591), and the revocation of provider-issued credentials on a password change or reset.
import type { AppDeps } from '../../../deps.ts';
import type { RouteDef } from '../../../route.ts';
import { registerOidcRevocation } from '../../../services/oauth-clients/revocation.ts';
import { registrationRoutes } from './registration.ts';
import { clientRoutes } from './routes.ts';

export function oauthClientRoutes(_deps: AppDeps): RouteDef<any, any, any>[] {
  registerOidcRevocation();
  return [...clientRoutes(), ...registrationRoutes()];
}
