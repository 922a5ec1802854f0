// An operation is declared once: its schemas (which validate and feed the OpenAPI document), its
// permission, rate-limit row and whether it honours Idempotency-Key. Handlers translate HTTP to a
// service call and return a Reply.
import type { Request, Response } from './http.ts';
import type { z } from 'zod';
import type { Config } from '../lib/config.ts';
import type { Need } from '../lib/permissions.ts';
import type { RequestContext } from './context.ts';
import type { AppDeps } from './deps.ts';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * Where the route sits in the pipeline (app.ts): public (before the gates), auth (/api/auth/*,
 * no credential chain), internal (runner routes, verified by signature), protected.
 */
export type RouteStage = 'public' | 'auth' | 'internal' | 'protected';

/** Which tenant context the route needs: none, an organization, or a space within it. */
export type TenantContext = 'none' | 'org' | 'space';

export interface RateLimitRow {
  /** requests per minute, or a function of the config for configurable rows */
  perMinute: number | ((config: Config) => number);
  /** what the bucket is keyed by besides method and route: the caller (default), the client IP, or the run */
  by?: 'caller' | 'ip' | 'run';
}

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
  /** response headers this status carries besides the ones every family declares (e.g. ETag) */
  headers?: string[];
}

export interface HandlerInput<B, Q, P> {
  ctx: RequestContext;
  body: B;
  query: Q;
  params: P;
  req: Request;
  res: Response;
  deps: AppDeps;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** the handler wrote the response itself (streams, downloads) */
  handled?: true;
}

export interface RouteDef<B = unknown, Q = unknown, P = unknown> {
  method: HttpMethod;
  /** OpenAPI-style path: /api/end-users/{id} */
  path: string;
  summary: string;
  tag: string;
  stage?: RouteStage;
  /** default: 'space' for the spec's space-scoped prefixes, else 'org' */
  tenant?: TenantContext;
  /**
   * What a protected operation needs, checked before its handler against the credential's
   * effective permissions (middleware/authenticate.ts, authorize). Every protected route declares
   * one (undeclaredRoutes; the app refuses to mount one without): a permission, { anyOf } when the
   * handler narrows by resource, or 'signed-in' for the caller's own things.
   */
  permission?: Need;
  /**
   * 'resource': the role that counts is the one in the organization or space the resource names
   * (the path's organization or space, a package's home, a webhook's or client's level), resolved
   * by the handler through reachOrg / reachSpace / package access, each cut to the same ceiling;
   * before the handler the need is checked against the credential's ceiling. Default: the request's
   * context (X-Org-Id / X-Space-Id or the credential's binding) decides before the handler.
   */
  authority?: 'resource';
  rateLimit?: RateLimitRow;
  idempotent?: boolean;
  /** only a session may call this route (API key management, account changes): every API key and OAuth token is refused; on /api/auth/* routes, it reads the session cookie */
  sessionOnly?: boolean;
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  params?: z.ZodType<P>;
  /**
   * a Server-Sent Events stream: an API key may come as ?token=, a session's context as ?orgId=
   * and ?spaceId=, role preview as ?view_as= (the X-View-As header is refused)
   */
  sse?: true;
  /** the handler reads the body itself (multipart uploads, signed event bodies) */
  rawBody?: boolean;
  /** the route's request body limit instead of API_BODY_LIMIT_BYTES (a handler that streams its body) */
  bodyLimit?: (config: Config) => number;
  /** the bodies a rawBody handler accepts, by content type, for the document */
  bodyContent?: Record<string, z.ZodType>;
  /** where a 201 reply's resource is read (sent as Location) */
  location?: (body: any, params: P) => string;
  /**
   * the organization is the one this path parameter names: a session or instance token sending no
   * X-Org-Id acts in it (the MCP endpoint, whose clients send no context headers)
   */
  orgParam?: string;
  /** an OAuth-protected resource: the WWW-Authenticate challenge its 401s carry (RFC 9728) */
  challenge?: (req: Request) => string;
  /** documented request headers */
  headers?: Array<{ name: string; required?: boolean; description: string }>;
  responses: Record<number, ResponseSpec>;
  handler(input: HandlerInput<B, Q, P>): Promise<Reply>;
}

export function route<B = unknown, Q = unknown, P = unknown>(def: RouteDef<B, Q, P>): RouteDef<B, Q, P> {
  return def;
}

/** A body already written as JSON (by PostgreSQL, say): sent as it is, never parsed again. */
export class JsonText {
  constructor(readonly text: string) {}
}

/** The JSON text of a reply body. */
export function jsonOf(body: unknown): string {
  return body instanceof JsonText ? body.text : JSON.stringify(body);
}

export const ok = (body: unknown, headers?: Record<string, string>): Reply => ({ status: 200, body, headers });
export const created = (body: unknown, headers?: Record<string, string>): Reply => ({ status: 201, body, headers });
export const noContent = (headers?: Record<string, string>): Reply => ({ status: 204, headers });
export const handled = (): Reply => ({ status: 0, handled: true });

/** Prefixes whose routes are space-scoped (spec, Context headers). */
export const SPACE_SCOPED_PREFIXES = [
  '/api/agents', '/api/runs', '/api/schedules', '/api/end-users', '/api/api-keys', '/api/notifications',
  '/api/packages', '/api/integrations', '/api/uploads', '/api/files',
];

export function defaultTenant(path: string): TenantContext {
  return SPACE_SCOPED_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`)) ? 'space' : 'org';
}


/** Protected routes that declare no permission: none may exist (the router refuses to mount one). */
export function undeclaredRoutes(routes: readonly RouteDef<any, any, any>[]): RouteDef<any, any, any>[] {
  return routes.filter((r) => (r.stage ?? 'protected') === 'protected' && (r.permission === undefined || (r.permission as unknown) === null));
}
