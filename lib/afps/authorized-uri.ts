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

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
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

  const pathPattern = new RegExp(`^${parsed.path.split('*').map(escapeRegExp).join('.*')}$`);
  return pathPattern.test(target.pathname + target.search);
}
