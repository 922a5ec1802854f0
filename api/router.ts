// Builds the handler of each declared route. For protected routes the per-route chain follows the
// spec's pipeline: authentication, impersonation and role-preview guards, organization,
// permissions, space, API version, the Idempotency-Key guard, then the route's own rate limit,
// idempotency, validation and handler.
import { setSpanTenant } from '../lib/tracing/index.ts';
import { isProblem, problemBody } from '../lib/problem.ts';
import type { AppDeps } from './deps.ts';
import type { Request, Response } from './http.ts';
import { readJsonBody } from './middleware/body.ts';
import { withCurrentSpellings } from './deprecated-spellings.ts';
import { resolveApiVersion, versionOnRefusal } from './middleware/api-version.ts';
import { createAuthenticate, refuseOtherTenant, type OidcVerifier } from './middleware/authenticate.ts';
import { applyImpersonation } from './middleware/impersonation.ts';
import { createIdempotency, refuseUnsupportedIdempotencyKey, type IdempotencyOutcome } from './middleware/idempotency.ts';
import { createRateLimiter } from './middleware/rate-limit.ts';
import { defaultTenant, jsonOf, JsonText, undeclaredRoutes, type Reply, type RouteDef, type RouteStage } from './route.ts';
import { parseBody, parseParams } from './validation.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function sendReply(res: Response, reply: Reply): void {
  if (reply.handled) return;
  if (reply.headers) for (const [k, v] of Object.entries(reply.headers)) res.setHeader(k, v);
  res.statusCode = reply.status;
  if (reply.body === undefined || reply.status === 204 || reply.status === 304) {
    res.end();
    return;
  }
  if (typeof reply.body === 'string' || Buffer.isBuffer(reply.body)) {
    res.end(reply.body);
    return;
  }
  if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(jsonOf(reply.body));
}

export interface MountOptions {
  oidc: { verify?: OidcVerifier };
}

export interface MountedRoute {
  stage: RouteStage;
  /** the route's template, as declared */
  path: string;
  /** the declared body limit of this route, when it has its own */
  bodyLimit?: number;
  handle(req: Request, res: Response): Promise<void>;
}

export function createRouteMounter(deps: AppDeps, opts: MountOptions) {
  const authenticate = createAuthenticate(deps, opts.oidc);
  const rateLimit = createRateLimiter(deps.cache, deps.config);
  const beginIdempotency = createIdempotency(deps.cache);
  const bodyLimit = deps.config.API_BODY_LIMIT_BYTES;
  const typeBase = deps.config.ERROR_TYPE_BASE;

  return function mount(def: RouteDef<any, any, any>): MountedRoute {
    const stage = def.stage ?? 'protected';
    // no protected operation escapes the authority rule: one without a declared need does not start
    if (undeclaredRoutes([def]).length) throw new Error(`${def.method.toUpperCase()} ${def.path} is protected but declares no permission`);
    const tenant = def.tenant ?? (stage === 'protected' ? defaultTenant(def.path) : 'none');
    const resolved: RouteDef<any, any, any> = { ...def, tenant };
    const pattern = def.path;
    const method = def.method.toUpperCase();

    const handle = async (req: Request, res: Response) => {
      if (stage === 'protected') {
        if (def.orgParam && req.headers['x-org-id'] === undefined && UUID.test(req.params[def.orgParam] ?? '')) req.headers['x-org-id'] = req.params[def.orgParam];
        try {
          await authenticate(req, res, resolved);
          refuseOtherTenant(req);
          await applyImpersonation(req, deps);
          resolveApiVersion(req, res);
          setSpanTenant({ orgId: req.ctx.org?.id, spaceId: req.ctx.space?.id });
        } catch (err) {
          if (def.challenge && isProblem(err) && err.status === 401) res.setHeader('WWW-Authenticate', def.challenge(req));
          // an authenticated caller's refusal still says which API version answered
          if (req.ctx.principal) versionOnRefusal(req, res);
          throw err;
        }
      }
      if (!def.idempotent && stage === 'protected') refuseUnsupportedIdempotencyKey(req);
      if (def.rateLimit) await rateLimit(req, res, def.rateLimit, method, pattern);

      const params = def.params ? parseParams(def.params, req.params) : req.params;
      const query = def.query ? parseParams(def.query, req.query) : req.query;
      let body: unknown;
      let idem: IdempotencyOutcome = {};
      let reply: Reply | null = null;
      try {
        if (!def.rawBody && (def.body || def.idempotent)) {
          const json = await readJsonBody(req, bodyLimit);
          if (stage === 'protected') refuseOtherTenant(req, json);
          if (def.idempotent) idem = await beginIdempotency(req, res, req.rawBody ?? Buffer.alloc(0));
          if (idem.replay) return sendReply(res, idem.replay);
          // public bodies still take the camelCase spellings of the deprecation period (deprecated-spellings.ts)
          if (def.body) body = parseBody(def.body, json === undefined ? {} : stage === 'internal' ? json : withCurrentSpellings(json));
        }
        reply = await def.handler({ ctx: req.ctx, body, query, params, req, res, deps });
        if (def.location && reply.status === 201 && reply.body !== undefined) reply.headers = { ...reply.headers, Location: def.location(reply.body instanceof JsonText ? JSON.parse(reply.body.text) : reply.body, params) };
        if (idem.settle) await idem.settle(reply);
      } catch (err) {
        // 4xx answers are stored and replayed like successes; 5xx and crashes release the key.
        if (idem.settle) {
          const stored = isProblem(err) && err.status < 500
            ? { status: err.status, body: problemBody(err, req.ctx.requestId, typeBase), headers: { 'content-type': 'application/problem+json; charset=utf-8' } }
            : null;
          await idem.settle(stored).catch(() => {});
        }
        throw err;
      }
      sendReply(res, reply);
    };
    return { stage, path: def.path, handle, bodyLimit: def.bodyLimit?.(deps.config) };
  };
}
