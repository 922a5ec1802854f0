// Everything the client side of the oidc module adds: the client routes, dynamic registration
// (RFC 7591), the settings of URL-named clients (client ID metadata documents), and the
// revocation of provider-issued credentials on a password change or reset.
import type { AppDeps } from '../../../deps.ts';
import type { RouteDef } from '../../../route.ts';
import { configureUrlClients } from '../../../services/oauth-clients/metadata-document.ts';
import { registerOidcRevocation } from '../../../services/oauth-clients/revocation.ts';
import { registrationRoutes } from './registration.ts';
import { clientRoutes } from './routes.ts';

export function oauthClientRoutes(deps: AppDeps): RouteDef<any, any, any>[] {
  registerOidcRevocation();
  configureUrlClients({
    egress: { allowInternalHosts: deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints: deps.platformEndpoints },
    ttlSeconds: deps.config.OAUTH_CLIENT_METADATA_TTL_SECONDS,
  });
  return [...clientRoutes(), ...registrationRoutes()];
}
