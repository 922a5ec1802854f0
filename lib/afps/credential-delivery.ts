// Where a connection's credential may go and how it travels: the header delivery.http renders,
// and whether a target URL is one the auth's authorized_uris bind safely. Pure: the platform's
// credential proxy and the sidecar's api_call share it.
import { matchesAuthorizedUri, parseAuthorizedUri, renderAuthorizedUri } from './authorized-uri.ts';

export interface HttpDelivery {
  in: 'header';
  name: string;
  prefix?: string;
  value: string;
}

const CREDENTIAL_REF = /\{\$credential\.([A-Za-z_][A-Za-z0-9_]*)\}/g;
const WHOLE_TEMPLATE_HOST = /^\{\$credential\.[A-Za-z_][A-Za-z0-9_]*\}$/;

/** The header a delivery renders from the credentials; null when none is declared or a field is missing. */
export function deliveryHeader(delivery: HttpDelivery | null | undefined, credentials: Record<string, string>): [string, string] | null {
  if (!delivery) return null;
  let missing = false;
  const value = delivery.value.replace(CREDENTIAL_REF, (_, field: string) => {
    const v = Object.hasOwn(credentials, field) ? credentials[field] : undefined;
    if (v === undefined || v === '') missing = true;
    return v ?? '';
  });
  if (missing || /[\r\n\0]/.test(value) || /[\r\n\0]/.test(delivery.prefix ?? '')) return null;
  return [delivery.name, `${delivery.prefix ?? ''}${value}`];
}

/**
 * An entry binds its host safely when the host is not chosen by a credential field as a whole
 * and a wildcard covers the subdomains of a registrable name (two labels at least), never a
 * top-level domain.
 */
function bindsSafely(pattern: string): boolean {
  const parsed = parseAuthorizedUri(pattern);
  if (typeof parsed === 'string') return false;
  if (WHOLE_TEMPLATE_HOST.test(parsed.host)) return false;
  if (parsed.wildcardHost) return parsed.host.slice(2).split('.').filter(Boolean).length >= 2;
  return true;
}

/**
 * Whether the credential may be sent to `url`: 'ok' when an entry matches and binds its host
 * safely, 'credential_exfiltration_refused' when only entries that do not bind the host safely
 * match, 'unauthorized_target' when no entry matches (or none is declared).
 */
export function authorizeCredentialTarget(
  authorizedUris: readonly string[],
  credentials: Record<string, string>,
  url: string,
): 'ok' | 'unauthorized_target' | 'credential_exfiltration_refused' {
  let unsafeMatch = false;
  for (const pattern of authorizedUris) {
    const rendered = renderAuthorizedUri(pattern, credentials);
    if (rendered === null || !matchesAuthorizedUri(rendered, url)) continue;
    if (bindsSafely(pattern)) return 'ok';
    unsafeMatch = true;
  }
  return unsafeMatch ? 'credential_exfiltration_refused' : 'unauthorized_target';
}
