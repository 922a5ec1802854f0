// Where an integration's credential may go and how it is put on a request: the header of
// delivery.http, and the authorized_uris entry that binds the target's host safely. Used by the
// sidecar's api_call (and by the credential proxy: same names, same meaning).
import { matchesAuthorizedUri, parseAuthorizedUri, renderAuthorizedUri, type AuthorizedUriPattern } from './authorized-uri.ts';

export interface HttpDelivery {
  in: 'header';
  name: string;
  prefix?: string;
  value: string;
}

const TEMPLATE = /\{\$credential\.([A-Za-z_][A-Za-z0-9_]*)\}/g;
const WHOLE_TEMPLATE_HOST = /^\{\$credential\.[A-Za-z_][A-Za-z0-9_]*\}$/;

/** Credential values shorter than this are not searched for in what the agent sends or receives. */
export const MIN_SECRET_LENGTH = 4;

/**
 * The header delivery.http puts on a request: [name, prefix + value with its templates filled].
 * Null without a delivery, or when a field it names is missing or empty (nothing half-filled goes out).
 */
export function deliveryHeader(delivery: HttpDelivery | null | undefined, credentials: Record<string, string>): [string, string] | null {
  if (!delivery || delivery.in !== 'header') return null;
  let missing = false;
  const value = delivery.value.replace(TEMPLATE, (_, field: string) => {
    const v = Object.hasOwn(credentials, field) ? credentials[field] : undefined;
    if (v === undefined || v === '') missing = true;
    return v ?? '';
  });
  const full = `${delivery.prefix ?? ''}${value}`;
  // a value that would split the header is no value
  if (missing || full === '' || /[\r\n\0]/.test(full)) return null;
  return [delivery.name, full];
}

/** The credential fields a set of authorized_uris renders into the URL (their values are not secret there). */
function templatedFields(authorizedUris: string[]): Set<string> {
  const fields = new Set<string>();
  for (const uri of authorizedUris) for (const m of uri.matchAll(TEMPLATE)) fields.add(m[1]);
  return fields;
}

/** The credential values worth searching for: long enough, and not rendered into an authorized URL. */
export function secretValues(credentials: Record<string, string>, authorizedUris: string[] = []): string[] {
  const publicFields = templatedFields(authorizedUris);
  const values = Object.entries(credentials)
    .filter(([field, v]) => !publicFields.has(field) && typeof v === 'string' && v.length >= MIN_SECRET_LENGTH)
    .map(([, v]) => v);
  // longest first, so a value holding another is replaced whole
  return [...new Set(values)].sort((a, b) => b.length - a.length);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/** Whether any secret value appears in `text`, as written or percent-decoded. */
export function carriesSecret(text: string, secrets: string[]): boolean {
  if (secrets.length === 0 || text === '') return false;
  const decoded = safeDecode(text);
  return secrets.some((s) => text.includes(s) || decoded.includes(s));
}

/**
 * An entry binds its host when the host is fixed: no wildcard (which lets the caller pick the
 * host), and not one credential field as a whole. The rendered host is judged, since a field
 * value may hold a "*".
 */
function bindsHost(declared: AuthorizedUriPattern, rendered: AuthorizedUriPattern): boolean {
  return !WHOLE_TEMPLATE_HOST.test(declared.host) && !rendered.wildcardHost && !rendered.host.includes('*');
}

/**
 * Whether `url` may receive the credential:
 * - 'unauthorized_target' when no entry (rendered with the credentials) matches it;
 * - 'credential_exfiltration_refused' when it matches only entries that let the caller choose the
 *   host (a wildcard host, a host that is one credential field as a whole, or a template whose
 *   value makes a wildcard), or when the URL itself carries a
 *   credential value the matching entry does not render into it;
 * - 'ok' when an entry with a fixed host matches.
 */
export function authorizeCredentialTarget(
  authorizedUris: string[],
  credentials: Record<string, string>,
  url: string,
): 'ok' | 'unauthorized_target' | 'credential_exfiltration_refused' {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return 'unauthorized_target';
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return 'unauthorized_target';
  if (target.username !== '' || target.password !== '') return 'credential_exfiltration_refused';

  let matched = false;
  let bound = false;
  for (const declared of authorizedUris) {
    const parsed = parseAuthorizedUri(declared);
    if (typeof parsed === 'string') continue;
    const rendered = parsed.literal ? declared : renderAuthorizedUri(declared, credentials);
    if (rendered === null) continue;
    // the rendered host is judged, not the declared one: a field value may turn it into a wildcard
    const reparsed = parseAuthorizedUri(rendered);
    if (typeof reparsed === 'string' || !reparsed.literal) continue;
    if (!matchesAuthorizedUri(rendered, target.href)) continue;
    matched = true;
    if (bindsHost(parsed, reparsed)) bound = true;
  }
  if (!matched) return 'unauthorized_target';
  if (!bound) return 'credential_exfiltration_refused';
  if (carriesSecret(target.href, secretValues(credentials, authorizedUris))) return 'credential_exfiltration_refused';
  return 'ok';
}

/**
 * The hosts authorized_uris name literally (no wildcard, no template in the host): the only ones
 * that may be internal (with EGRESS_ALLOW_INTERNAL_HOSTS).
 */
export function literalAuthorizedHosts(authorizedUris: string[]): string[] {
  const hosts: string[] = [];
  for (const uri of authorizedUris) {
    const parsed = parseAuthorizedUri(uri);
    if (typeof parsed === 'string' || parsed.wildcardHost || parsed.host.includes('{')) continue;
    hosts.push(parsed.host.replace(/^\[(.*)\]$/, '$1'));
  }
  return hosts;
}

/** `text` with every secret value replaced by [redacted] (as written and percent-encoded). */
export function scrubSecrets(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) {
    for (const form of new Set([s, encodeURIComponent(s), JSON.stringify(s).slice(1, -1), Buffer.from(s).toString('base64')])) {
      if (form.length >= MIN_SECRET_LENGTH) out = out.split(form).join('[redacted]');
    }
  }
  return out;
}

/** what a scrubbed credential reads as */
export const REDACTED = '[redacted]';

/**
 * The strings that give a credential away, longest first: each secret value, the injected header
 * value, and the Basic pairs (`value:`, `:value`, `a:b`), each as written, percent-encoded,
 * JSON-escaped and in base64 and base64url (unpadded, so a value followed by more bytes still matches).
 */
export function scrubForms(secrets: string[], injectedValue?: string): string[] {
  const raw = new Set<string>(injectedValue === undefined ? secrets : [injectedValue, ...secrets]);
  for (const a of secrets) {
    raw.add(`${a}:`);
    raw.add(`:${a}`);
    for (const b of secrets) if (a !== b) raw.add(`${a}:${b}`);
  }
  const forms = new Set<string>();
  for (const r of raw) {
    const bytes = Buffer.from(r, 'utf8');
    for (const f of [r, encodeURIComponent(r), JSON.stringify(r).slice(1, -1), bytes.toString('base64').replace(/=+$/, ''), bytes.toString('base64url')]) {
      if (f.length >= MIN_SECRET_LENGTH) forms.add(f);
    }
  }
  return [...forms].sort((x, y) => y.length - x.length);
}
