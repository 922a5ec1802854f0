// authorized_uris patterns: the only URLs that may receive an integration's credential.
//
//   pattern := ("http" | "https") "://" host [":" port] path
//
// host is a DNS name, an IPv4 address or a bracketed IPv6 address; it may start with "*." (any
// subdomain). path starts with "/" and may hold "*" (any run of characters, query included).
// Host and path may hold {$credential.<field>} templates, rendered from the connection's fields;
// a pattern without templates is literal.

export interface AuthorizedUriPattern {
  scheme: 'http' | 'https';
  /** as written, lower-cased; may hold templates or a leading "*." */
  host: string;
  port?: number;
  path: string;
  /** credential fields the pattern's templates name */
  credentialFields: string[];
  literal: boolean;
  wildcardHost: boolean;
}

const TEMPLATE = /\{\$credential\.([A-Za-z_][A-Za-z0-9_]*)\}/g;
const SHAPE = /^(https?):\/\/([^/?#\s]+)(\/[^#\s]*)$/i;
const DNS_HOST = /^(?:\*\.)?[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/;
const IPV6_HOST = /^\[[0-9a-f:.]+\]$/;

/** The parsed pattern, or the reason it is not one. */
export function parseAuthorizedUri(pattern: string): AuthorizedUriPattern | string {
  const credentialFields = [...pattern.matchAll(TEMPLATE)].map((m) => m[1]);
  const untemplated = pattern.replace(TEMPLATE, 'x');
  if (/[{}]/.test(untemplated)) return 'holds braces that are not a {$credential.<field>} template';

  // A template holds none of the separators, so the pattern splits as written.
  const shape = SHAPE.exec(pattern);
  if (!shape) return 'must be an http(s) URL pattern with a path, for example https://api.example.com/*';
  const [, scheme, authority, path] = shape;
  if (authority.includes('@')) return 'must not carry user information';

  const portMatch = /:(\d{1,5})$/.exec(authority);
  const host = (portMatch ? authority.slice(0, -portMatch[0].length) : authority).toLowerCase();
  const hostShape = host.replace(TEMPLATE, 'x');
  if (!DNS_HOST.test(hostShape) && !IPV6_HOST.test(hostShape)) return `has an invalid host ${JSON.stringify(host)}`;
  const port = portMatch ? Number(portMatch[1]) : undefined;
  if (port !== undefined && (port < 1 || port > 65535)) return 'has a port out of range';

  return {
    scheme: scheme.toLowerCase() as 'http' | 'https',
    host,
    port,
    path,
    credentialFields,
    literal: credentialFields.length === 0,
    wildcardHost: host.startsWith('*.'),
  };
}

/** Fills the templates; null when a field is missing or its value would change the URL's shape. */
export function renderAuthorizedUri(pattern: string, fields: Record<string, string>): string | null {
  let broken = false;
  const rendered = pattern.replace(TEMPLATE, (_, field: string) => {
    const value = Object.hasOwn(fields, field) ? fields[field] : undefined;
    if (value === undefined || value === '' || /[/:@?#{}\s\\]/.test(value)) broken = true;
    return value ?? '';
  });
  return broken ? null : rendered;
}

/**
 * Whether `text` matches `glob`, where each * stands for any run of characters. Literal parts are
 * found leftmost-first, which is enough for * globs: no backtracking, so at most text × glob steps.
 */
function matchesGlob(glob: string, text: string): boolean {
  const parts = glob.split('*');
  const first = parts[0];
  const last = parts[parts.length - 1];
  if (parts.length === 1) return text === glob;
  if (text.length < first.length + last.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  let at = first.length;
  const end = text.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = text.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** Whether `url` falls under a literal pattern (render templated ones first). */
export function matchesAuthorizedUri(pattern: string, url: string): boolean {
  const parsed = parseAuthorizedUri(pattern);
  if (typeof parsed === 'string' || !parsed.literal) return false;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return false;
  }
  if (target.protocol !== `${parsed.scheme}:` || target.username !== '' || target.password !== '') return false;

  const defaultPort = parsed.scheme === 'https' ? 443 : 80;
  const targetPort = target.port === '' ? defaultPort : Number(target.port);
  if ((parsed.port ?? defaultPort) !== targetPort) return false;

  const hostname = target.hostname.toLowerCase();
  if (parsed.wildcardHost) {
    const suffix = parsed.host.slice(1); // ".example.com"
    if (!hostname.endsWith(suffix) || hostname.length === suffix.length) return false;
  } else if (hostname !== parsed.host) {
    return false;
  }

  return matchesGlob(parsed.path, target.pathname + target.search);
}
