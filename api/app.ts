// The HTTP pipeline, in the spec's order (What the service does, item 11):
// error handler, Request-Id and traceparent, client IP, CORS, the origin of cookie writes, body limit; unauthenticated routes;
// the starting and shutdown gates; /api/auth/*; then protected routes, whose per-route chain
// (router.ts) runs authentication, guards, organization, permissions, space, API version, the
// Idempotency-Key guard, rate limit, idempotency and the handler; module handlers; 404.
import { failActiveSpan, parseTraceparent, renameActiveSpan, setSpanAttributes, tracingActive, withSpan } from '../lib/tracing/index.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { problem } from '../lib/problem.ts';
import type { AppDeps } from './deps.ts';
import { compileTrust, decorate, RouteTable, type Request, type Response } from './http.ts';
import { checkDeclaredLength } from './middleware/body.ts';
import { refuseBadParams, refuseBadQuery } from './middleware/clean-input.ts';
import { cookieWriteOrigin } from './middleware/cookie-origin.ts';
import { cors } from './middleware/cors.ts';
import { errorHandler } from './middleware/errors.ts';
import { lifecycleGates } from './middleware/gates.ts';
import { requestContext } from './middleware/request-context.ts';
import type { OidcVerifier } from './middleware/authenticate.ts';
import { buildOpenApiDocument, type DocumentedRoute } from './openapi.ts';
import { createRouteMounter, type MountedRoute } from './router.ts';
import { buildLlmsFullTxt, buildLlmsTxt } from './llms.ts';
import { publicRoutes, type PublicDocs } from './routes/public.ts';
import type { RouteDef } from './route.ts';
import { sessionCookieName } from './services/session-cookie.ts';
import { createAssetServer } from './static-assets.ts';
import { createDashboardServer } from './dashboard-assets.ts';
import type { Logger } from '../lib/log.ts';
import { mailerFor } from '../lib/mail.ts';
import { metrics } from '../lib/metrics/index.ts';

/** Answers a request it serves (true) or leaves it to the 404 (false). */
export type ModuleHandler = (req: Request, res: Response) => Promise<boolean>;

export interface ApiModule {
  name: string;
  routes: RouteDef<any, any, any>[];
  /** for what cannot be declared as routes (streams, protocol endpoints); runs after the gates */
  handler?: (deps: AppDeps) => ModuleHandler;
  oidcVerifier?: OidcVerifier;
  /** operations its handler serves, declared for the OpenAPI document (they are not in the route table) */
  operations?: DocumentedRoute[];
  /** Restate services the module adds to the worker's workflow endpoint */
  services?: unknown[];
  /** background work started once the engine is reachable (API roles); stopped on shutdown */
  start?: (engine: { ingressUrl: string }) => { stop(): Promise<void> };
}

export interface AppParts {
  routes: RouteDef<any, any, any>[];
  modules: ApiModule[];
  log: Logger;
  version: string;
}

/** The request listener for node:http. */
export type App = (req: IncomingMessage, res: ServerResponse) => void;

export function parseTrustProxy(value: string): boolean | number | string[] {
  if (value === 'false' || value === '') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}

/** Counts the request once its response is done (or its client gone), under its route's template. */
function countRequest(req: Request, res: Response): void {
  const t0 = performance.now();
  res.once('close', () => metrics.httpRequest(req.method, req.route ?? 'unmatched', res.statusCode, (performance.now() - t0) / 1000));
}

export function createApp(deps: AppDeps, parts: AppParts): { app: App; routes: RouteDef<any, any, any>[] } {
  const { config } = deps;
  const trust = compileTrust(parseTrustProxy(config.TRUST_PROXY));
  const corsStage = cors(config.TRUSTED_ORIGINS);
  const checkCookieWriteOrigin = cookieWriteOrigin({ cookieName: sessionCookieName(config), publicUrl: config.PUBLIC_URL, trustedOrigins: config.TRUSTED_ORIGINS });
  const bodyLimit = config.API_BODY_LIMIT_BYTES;
  const gate = lifecycleGates(deps.lifecycle);
  const onError = errorHandler(config.ERROR_TYPE_BASE, parts.log);
  const serveAsset = createAssetServer();
  const serveDashboard = createDashboardServer();
  // made here, at boot, so that a disabled mail setup is logged once before the first request
  mailerFor(config, deps.log);

  const docs: PublicDocs = {};
  const pub = publicRoutes(docs);
  const moduleRoutes = parts.modules.flatMap((m) => m.routes);
  const all = [...pub, ...parts.routes, ...moduleRoutes];
  const oidc = { verify: parts.modules.find((m) => m.oidcVerifier)?.oidcVerifier };
  const mount = createRouteMounter(deps, { oidc });
  const table = new RouteTable<MountedRoute>();
  for (const r of all) table.add(r.method, r.path, mount(r));
  const moduleHandlers = parts.modules.flatMap((m) => (m.handler ? [m.handler(deps)] : []));

  async function route(req: Request, res: Response): Promise<void> {
    if (corsStage(req, res)) return;
    checkCookieWriteOrigin(req);
    refuseBadQuery(req.query);
    let found: ReturnType<typeof table.match>;
    try {
      found = table.match(req.method, req.path);
    } catch {
      throw problem('invalid_request', { detail: 'The request path is not valid percent-encoding.' });
    }
    if (found) req.route = found.pattern;
    checkDeclaredLength(req, found?.value.bodyLimit ?? bodyLimit);
    if (found) refuseBadParams(found.params);
    if (found && tracingActive()) {
      renameActiveSpan(`${req.method} ${found.value.path}`);
      setSpanAttributes({ 'http.route': found.value.path });
    }
    if (found && found.value.stage === 'public') {
      req.params = found.params;
      return found.value.handle(req, res);
    }
    if (!found && (serveAsset(req, res) || serveDashboard(req, res))) {
      req.route = 'static';
      return;
    }
    gate(req, res);
    if (found) {
      req.params = found.params;
      return found.value.handle(req, res);
    }
    for (const h of moduleHandlers) {
      if (await h(req, res)) {
        req.route ??= 'module';
        return;
      }
    }
    if (req.method === 'OPTIONS') {
      const allowed = table.methodsFor(req.path);
      if (allowed.length) {
        res.setHeader('Allow', [...allowed, 'HEAD', 'OPTIONS'].join(', '));
        res.setHeader('Content-Length', '0');
        res.statusCode = 200;
        res.end();
        return;
      }
    }
    // answered, not thrown: a rejected promise costs more than the rest of this path
    onError(problem('not_found', { detail: 'No such route.' }), req, res);
  }

  const serve = async (req: Request, res: Response) => {
    try {
      requestContext(req, res, trust);
      await route(req, res);
    } catch (err) {
      onError(err, req, res);
    }
  };
  const app: App = async (raw, res) => {
    const req = decorate(raw);
    if (metrics.enabled) countRequest(req, res);
    if (!tracingActive()) return serve(req, res);
    // the server span: method and route template, the status; never the query, headers or body
    return withSpan(req.method, { 'http.request.method': req.method }, async () => {
      await serve(req, res);
      setSpanAttributes({ 'http.response.status_code': res.statusCode });
      if (res.statusCode >= 500) failActiveSpan(String(res.statusCode));
    }, { kind: 'server', parent: parseTraceparent(req.headers.traceparent) });
  };

  const served = parts.modules.flatMap((m) => m.operations ?? []);
  docs.openapi = buildOpenApiDocument([...all, ...served], { version: parts.version, serverUrl: config.PUBLIC_URL, sessionCookie: sessionCookieName(config) });
  docs.llms = buildLlmsTxt(all, config);
  docs.llmsFull = buildLlmsFullTxt([...all, ...served]);
  return { app, routes: all };
}
