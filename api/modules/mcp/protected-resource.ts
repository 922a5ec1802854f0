// The MCP endpoint as an OAuth-protected resource (RFC 9728): its metadata document and the
// challenge its 401s carry. The authorization server is the instance itself (the oidc module).
import type { Config } from '../../../lib/config.ts';
import { KEY_SCOPES } from '../../../lib/permissions.ts';
import type { Request } from '../../http.ts';

export const MCP_PATH_PREFIX = '/api/mcp/o/';
export const METADATA_PREFIX = '/.well-known/oauth-protected-resource';

/** PUBLIC_URL; without it, the address the request was sent to (set PUBLIC_URL behind a proxy). */
export function baseUrlOf(config: Config, req: Request): string {
  if (config.PUBLIC_URL) return config.PUBLIC_URL.replace(/\/+$/, '');
  const host = typeof req.headers.host === 'string' && /^[A-Za-z0-9.:[\]-]+$/.test(req.headers.host) ? req.headers.host : `${config.HOST}:${config.PORT}`;
  return `http://${host}`;
}

export const endpointPath = (org: string) => `${MCP_PATH_PREFIX}${encodeURIComponent(org)}`;

export function metadataUrl(config: Config, req: Request, org: string): string {
  return `${baseUrlOf(config, req)}${METADATA_PREFIX}${endpointPath(org)}`;
}

/** RFC 6750 challenge naming the metadata (RFC 9728 section 5.1). */
export function challengeFor(config: Config, req: Request, org: string): string {
  return `Bearer resource_metadata="${metadataUrl(config, req, org)}"`;
}

export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported: string[];
  bearer_methods_supported: string[];
  resource_name: string;
}

// the MCP scopes first: the others are those of the operations invoked through the endpoint
const SCOPES = ['mcp:read', 'mcp:invoke', ...KEY_SCOPES.filter((s) => !s.startsWith('mcp:'))];

export function protectedResourceMetadata(config: Config, req: Request, org: string): ProtectedResourceMetadata {
  const base = baseUrlOf(config, req);
  return {
    resource: `${base}${endpointPath(org)}`,
    authorization_servers: [base],
    scopes_supported: SCOPES,
    bearer_methods_supported: ['header'],
    resource_name: 'Agent Platform API (MCP)',
  };
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * An Origin header (sent by browsers) must name the instance itself or a trusted origin, so a page
 * whose name was rebound to this address cannot drive the endpoint (MCP transport rules). Without
 * PUBLIC_URL only loopback origins count as the instance's own.
 */
export function originAllowed(config: Config, origin: string): boolean {
  if (config.TRUSTED_ORIGINS.includes(origin)) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (config.PUBLIC_URL) return url.origin === new URL(config.PUBLIC_URL).origin;
  return LOOPBACK.has(url.hostname);
}
