// The HTTP pipeline, in the spec's order (What the service does, item 11):
// error handler, Request-Id, client IP, CORS, body limit; unauthenticated routes; the starting and
// shutdown gates; /api/auth/*; then protected routes, whose per-route chain (router.ts) runs
// authentication, guards, organization, permissions, space, API version, the Idempotency-Key
// guard, rate limit, idempotency and the handler; module routers; 404.
import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type Express, type Router } from 'express';
import type { AppDeps } from './deps.ts';
import { bodyLimit } from './middleware/body.ts';
import { cors } from './middleware/cors.ts';
import { errorHandler } from './middleware/errors.ts';
import { lifecycleGates } from './middleware/gates.ts';
import { requestContext } from './middleware/request-context.ts';
import type { OidcVerifier } from './middleware/authenticate.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { createRouteMounter, notFoundRouter } from './router.ts';
import { buildLlmsTxt, publicRoutes, type PublicDocs } from './routes/public.ts';
import type { RouteDef } from './route.ts';
import type { Logger } from '../lib/log.ts';

export interface ApiModule {
  name: string;
  routes: RouteDef<any, any, any>[];
  /** a router for what cannot be declared as routes (streams, protocol endpoints) */
  router?: (deps: AppDeps) => Router;
  oidcVerifier?: OidcVerifier;
}

export interface AppParts {
  routes: RouteDef<any, any, any>[];
  modules: ApiModule[];
  log: Logger;
  version: string;
}

export function parseTrustProxy(value: string): boolean | number | string[] {
  if (value === 'false' || value === '') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}

export function createApp(deps: AppDeps, parts: AppParts): { app: Express; routes: RouteDef<any, any, any>[] } {
  const { config } = deps;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', parseTrustProxy(config.TRUST_PROXY));

  app.use(requestContext);
  app.use(cors(config.TRUSTED_ORIGINS));
  app.use(bodyLimit(config.API_BODY_LIMIT_BYTES));

  const docs: PublicDocs = {};
  const pub = publicRoutes(docs);
  const moduleRoutes = parts.modules.flatMap((m) => m.routes);
  const all = [...pub, ...parts.routes, ...moduleRoutes];
  const oidc = { verify: parts.modules.find((m) => m.oidcVerifier)?.oidcVerifier };
  const mount = createRouteMounter(deps, { oidc });

  // Public routes sit on the app itself: a nested router costs every request a little.
  for (const r of pub) mount(app, r);
  const requireFromHere = createRequire(import.meta.url);
  // Resolve the folder only: requiring the package would load its whole bundle at start-up.
  const swaggerDir = path.dirname(requireFromHere.resolve('swagger-ui-dist/package.json'));
  app.use('/api/docs/assets', express.static(swaggerDir, { index: false, maxAge: '1h' }));

  app.use(lifecycleGates(deps.lifecycle));

  const authRouter = express.Router();
  const protectedRouter = express.Router();
  for (const r of [...parts.routes, ...moduleRoutes]) mount((r.stage ?? 'protected') === 'protected' ? protectedRouter : authRouter, r);
  app.use(authRouter);
  app.use(protectedRouter);
  for (const m of parts.modules) if (m.router) app.use(m.router(deps));

  app.use(notFoundRouter());
  app.use(errorHandler(config.ERROR_TYPE_BASE, parts.log));

  docs.openapi = buildOpenApiDocument(all, { version: parts.version, serverUrl: config.PUBLIC_URL });
  docs.llms = buildLlmsTxt(all);
  return { app, routes: all };
}
