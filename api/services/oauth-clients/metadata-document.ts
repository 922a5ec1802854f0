// Client ID metadata documents: a client named by an https URL (as current MCP clients are) is
// described by the JSON document that URL serves. The document is fetched through the egress
// guard (size and time capped, no redirect followed), must name itself (client_id equal to the
// URL), must describe a public client, and is cached as an instance-level oauth_clients row
// (registration metadata_document) that is fetched again once older than the TTL. A document that
// cannot be fetched or is refused leaves the client unknown (null), never half-trusted.
import type pg from 'pg';
import type { SecretBox } from '../../../lib/crypto.ts';
import { guardedFetch, parseHostPort, effectivePort, type EgressOptions } from '../../../lib/egress.ts';
import { vetPublicClientMetadata } from './public-client-metadata.ts';
import { recordOf, type OAuthClientRecord } from './store.ts';

export interface UrlClientOptions {
  egress: EgressOptions;
  /** seconds a fetched document is trusted before it is fetched again */
  ttlSeconds: number;
  /** the whole fetch, headers and body (default 5 s) */
  timeoutMs?: number;
  /** the largest document read (default 5 KiB) */
  maxBytes?: number;
}

export interface UrlClientDeps {
  pool: pg.Pool;
  secrets: SecretBox;
  urlClients?: UrlClientOptions;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_BYTES = 5 * 1024;
const MAX_URL_LENGTH = 2048;

// Set by the oidc module from the configuration, so callers of findOAuthClient need pass nothing.
let configured: UrlClientOptions = { egress: { allowInternalHosts: [] }, ttlSeconds: 3600 };

export function configureUrlClients(opts: UrlClientOptions): void {
  configured = opts;
}

/** Whether a client_id names a metadata document rather than a registered client. */
export function isUrlClientId(clientId: string): boolean {
  return clientId.startsWith('https://') || clientId.startsWith('http://');
}

export class UrlClientRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UrlClientRefusal';
  }
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * The URL rules of a client ID: https with a path, no fragment, no user info, no dot segments,
 * written in canonical form. Plain http only for a loopback host:port the operator allowlisted in
 * EGRESS_ALLOW_INTERNAL_HOSTS (local development and tests).
 */
export function clientIdUrl(clientId: string, egress: EgressOptions): URL {
  if (clientId.length > MAX_URL_LENGTH) throw new UrlClientRefusal('the client_id URL is too long');
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw new UrlClientRefusal('the client_id is not a URL');
  }
  if (url.href !== clientId) throw new UrlClientRefusal('the client_id URL is not in canonical form');
  if (url.username || url.password) throw new UrlClientRefusal('the client_id URL carries user information');
  if (url.hash || clientId.includes('#')) throw new UrlClientRefusal('the client_id URL carries a fragment');
  if (url.pathname === '/' || url.pathname === '') throw new UrlClientRefusal('the client_id URL has no path');
  if (url.pathname.split('/').some((s) => s === '.' || s === '..' || /^%2e/i.test(s))) throw new UrlClientRefusal('the client_id URL has dot segments');
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) {
    const port = effectivePort(url);
    const allowed = egress.allowInternalHosts.some((entry) => {
      const hp = parseHostPort(entry);
      return hp !== null && hp.port === port && (hp.host === url.hostname || `[${hp.host}]` === url.hostname);
    });
    if (allowed) return url;
  }
  throw new UrlClientRefusal('the client_id URL must use https');
}

async function readCapped(res: Response, max: number): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel().catch(() => {});
    throw new UrlClientRefusal(`the metadata document is over ${max} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > max) {
      await res.body?.cancel().catch(() => {});
      throw new UrlClientRefusal(`the metadata document is over ${max} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** Fetches and checks the document; a UrlClientRefusal says why it is not trusted. */
export async function fetchClientMetadataDocument(clientId: string, opts: UrlClientOptions): Promise<unknown> {
  const url = clientIdUrl(clientId, opts.egress);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let res: Response;
  let body: Buffer;
  try {
    res = await guardedFetch(url, { headers: { accept: 'application/json' }, timeoutMs, signal: AbortSignal.timeout(timeoutMs) }, opts.egress);
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => {});
      throw new UrlClientRefusal(`the metadata document answered ${res.status}`);
    }
    if (!/^application\/([a-z.+-]*\+)?json\b/i.test(res.headers.get('content-type') ?? '')) {
      await res.body?.cancel().catch(() => {});
      throw new UrlClientRefusal('the metadata document is not application/json');
    }
    body = await readCapped(res, opts.maxBytes ?? DEFAULT_MAX_BYTES);
  } catch (err) {
    if (err instanceof UrlClientRefusal) throw err;
    throw new UrlClientRefusal(`the metadata document could not be fetched: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    throw new UrlClientRefusal('the metadata document is not valid JSON');
  }
  if (typeof doc !== 'object' || doc === null || (doc as { client_id?: unknown }).client_id !== clientId) {
    throw new UrlClientRefusal('the metadata document does not name this URL as its client_id');
  }
  return doc;
}

type Row = Parameters<typeof recordOf>[0];

/**
 * The client a URL client_id names: the cached row while fresh, else the document fetched again
 * and the row replaced. Null when the document is unreachable or refused.
 */
export async function resolveUrlClient(deps: UrlClientDeps, clientId: string): Promise<OAuthClientRecord | null> {
  const opts = deps.urlClients ?? configured;
  try {
    clientIdUrl(clientId, opts.egress);
  } catch {
    return null;
  }
  const cached = await deps.pool.query<Row & { fresh: boolean }>(
    `SELECT *, updated_at > now() - make_interval(secs => $2) AS fresh FROM oauth_clients WHERE id = $1 AND registration = 'metadata_document'`,
    [clientId, opts.ttlSeconds],
  );
  if (cached.rows[0]?.fresh) return recordOf(cached.rows[0], deps.secrets);
  let doc: unknown;
  let m;
  try {
    doc = await fetchClientMetadataDocument(clientId, opts);
    m = vetPublicClientMetadata(doc, { name: new URL(clientId).host });
  } catch {
    // a stale copy is not served: the document may have been withdrawn or changed on purpose
    await deps.pool.query(`DELETE FROM oauth_clients WHERE id = $1 AND registration = 'metadata_document'`, [clientId]);
    return null;
  }
  const { rows } = await deps.pool.query<Row>(
    `INSERT INTO oauth_clients (id, level, name, redirect_uris, post_logout_redirect_uris, grant_types, token_endpoint_auth_method,
                                scopes, registration, metadata)
     VALUES ($1, 'instance', $2, $3, $4, $5, 'none', $6, 'metadata_document', $7)
     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, redirect_uris = EXCLUDED.redirect_uris,
       post_logout_redirect_uris = EXCLUDED.post_logout_redirect_uris, grant_types = EXCLUDED.grant_types,
       scopes = EXCLUDED.scopes, metadata = EXCLUDED.metadata, updated_at = now()
       WHERE oauth_clients.registration = 'metadata_document'
     RETURNING *`,
    [clientId, m.name, m.redirectUris, m.postLogoutRedirectUris, m.grantTypes, m.scopes, JSON.stringify(m.extra)],
  );
  return rows[0] ? recordOf(rows[0], deps.secrets) : null;
}
