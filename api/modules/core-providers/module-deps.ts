// What the provider services need beyond the tenant scope: the secret box and the egress policy.
import type { EgressOptions } from '../../../lib/egress.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import type { AppDeps } from '../../deps.ts';

export interface ProvidersDeps {
  secrets: SecretBox;
  egress: EgressOptions;
}

export function providersDepsOf(deps: AppDeps): ProvidersDeps {
  return { secrets: deps.secrets, egress: { allowInternalHosts: deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints: deps.platformEndpoints } };
}
