// Accounts and sessions (/api/auth/*). These routes run before the authentication chain: those
// that need the signed-in user read the session cookie themselves. They neither honour nor refuse
// Idempotency-Key. In production each is rate limited per client IP by its own limiter.
//
// request-password-reset always answers 202 with the same bytes for every address, never before
// RESET_ANSWER_FLOOR_MS; with mail enabled (SMTP_URL) the link is e-mailed to the account's address
// (delivery: email), otherwise nothing is sent (delivery: disabled) and a development or test
// instance appends the link to DATA_DIR/reset-links.log. No mode puts the token in the answer.
import { z } from 'zod';
import type { AppDeps } from '../deps.ts';
import { createRateLimiter } from '../middleware/rate-limit.ts';
import { mailerFor } from '../../lib/mail.ts';
import { ProblemSchema } from '../openapi.ts';
import { created, noContent, ok, route, type HandlerInput, type Reply, type ResponseSpec, type RouteDef } from '../route.ts';
import * as accounts from '../services/accounts.ts';
import { redeemBootstrap } from '../services/bootstrap.ts';
import { mailVerificationLink } from '../services/email-verification.ts';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../services/passwords.ts';
import { clearedSessionCookie } from '../services/session-cookie.ts';
import { readSignedInSession, requireSignedInSession, signIn } from '../services/sessions.ts';

/** request-password-reset answers after this, whatever the address: the issuing work (one lookup, a delete and an insert) is done well within it. */
export const RESET_ANSWER_FLOOR_MS = 200;

const Password = z.string().min(PASSWORD_MIN_LENGTH).max(PASSWORD_MAX_LENGTH);
export const User = z.object({ id: z.string(), email: z.string(), name: z.string(), email_verified: z.boolean(), createdAt: z.string() }).meta({ id: 'User' });
export const SessionInfo = z.object({ id: z.string(), expiresAt: z.string() });
export const SignedIn = z.object({ user: User, session: SessionInfo }).meta({ id: 'SignedIn' });
const SignedUp = z.object({ user: User, session: SessionInfo.optional() }).meta({ id: 'SignedUp' });

export const problemResponse = (description: string) => ({ description, schema: ProblemSchema, contentType: 'application/problem+json' });
const UNAUTHORIZED = { 401: problemResponse('unauthorized: no valid session') };

const limiters = new WeakMap<AppDeps, ReturnType<typeof createRateLimiter>>();

interface AuthRouteDef<B, Q = unknown> extends Omit<RouteDef<B, Q, any>, 'stage' | 'tenant' | 'tag'> {
  /** requests per minute per client IP, enforced when NODE_ENV is production */
  productionLimit: number;
}

/** An /api/auth/* route: outside the authentication chain, limited per IP in production. */
export function authRoute<B, Q = unknown>(def: AuthRouteDef<B, Q>): RouteDef<B, Q, any> {
  const { productionLimit, handler, ...rest } = def;
  return route({
    ...rest,
    stage: 'auth',
    tenant: 'none',
    tag: 'Authentication',
    // in production every answer carries the limiter's headers
    responses: Object.fromEntries(Object.entries({ ...def.responses, 429: problemResponse('rate_limited: too many attempts from this address (production only)') })
      .map(([status, spec]: [string, ResponseSpec]) => [status, { ...spec, headers: [...(spec.headers ?? []), 'RateLimit', 'RateLimit-Policy'] }])),
    handler: async (input: HandlerInput<B, Q, any>) => {
      const { deps, req, res } = input;
      if (deps.config.NODE_ENV === 'production') {
        let limit = limiters.get(deps);
        if (!limit) limiters.set(deps, (limit = createRateLimiter(deps.cache, deps.config)));
        await limit(req, res, { perMinute: productionLimit, by: 'ip' }, def.method.toUpperCase(), def.path);
      }
      return handler(input);
    },
  });
}

export function clientOf(input: HandlerInput<unknown, unknown, unknown>) {
  return { ip: input.ctx.ip, userAgent: input.ctx.userAgent };
}

export function signedInReply(status: 200 | 201, input: HandlerInput<any, any, any>, result: { user: accounts.User; session: { sessionId: string; token: string; expiresAt: Date } }): Reply {
  signIn(input.deps, input.res, result.session);
  const body = { user: result.user, session: { id: result.session.sessionId, expiresAt: result.session.expiresAt.toISOString() } };
  return status === 201 ? created(body) : ok(body);
}

export const authRoutes = [
  authRoute({
    method: 'post', path: '/api/auth/sign-up/email', summary: 'Create an account and sign in', productionLimit: 5,
    body: z.object({ email: z.email().max(320), password: Password, name: z.string().trim().min(1).max(200) }).strict(),
    responses: {
      201: {
        description: 'Account created and a verification link e-mailed (with mail enabled). The session cookie is set and session present, unless AUTH_EMAIL_VERIFICATION is required: then sign in once the address is verified',
        schema: SignedUp,
      },
    },
    handler: async (input) => {
      const { deps } = input;
      const store = { pool: deps.database.pool, authCache: deps.authCache, config: deps.config };
      const result = await accounts.signUp(store, input.body, clientOf(input));
      mailVerificationLink(mailerFor(deps.config, deps.log), deps.log, result.user.email, result.verificationToken);
      if (!result.session) return created({ user: result.user });
      return signedInReply(201, input, { user: result.user, session: result.session });
    },
  }),
  authRoute({
    method: 'post', path: '/api/auth/sign-in/email', summary: 'Sign in with email and password; sets the session cookie', productionLimit: 10,
    body: z.object({ email: z.string().min(1).max(320), password: z.string().min(1).max(PASSWORD_MAX_LENGTH) }).strict(),
    responses: {
      200: { description: 'Signed in; the session cookie is set', schema: SignedIn },
      401: problemResponse('unauthorized: the email or password is wrong'),
      403: problemResponse('forbidden: the address is not verified yet (AUTH_EMAIL_VERIFICATION required)'),
    },
    handler: async (input) => signedInReply(200, input, await accounts.signInWithPassword(input.deps.database.pool, input.deps.config, input.body, clientOf(input))),
  }),
  authRoute({
    method: 'post', path: '/api/auth/sign-out', summary: 'End the current session', productionLimit: 30,
    responses: { 204: { description: 'Signed out; the cookie is cleared' } },
    handler: async ({ req, deps }) => {
      const session = await readSignedInSession(req, deps);
      if (session) await accounts.signOut({ pool: deps.database.pool, authCache: deps.authCache }, session.sessionId);
      return noContent({ 'Set-Cookie': clearedSessionCookie(deps.config) });
    },
  }),
  authRoute({
    method: 'get', path: '/api/auth/session', summary: 'The signed-in user and session', productionLimit: 300,
    sessionOnly: true,
    responses: { 200: { description: 'The current session', schema: SignedIn }, ...UNAUTHORIZED },
    handler: async ({ req, deps }) => {
      const s = await requireSignedInSession(req, deps);
      const user = await accounts.getUser(deps.database.pool, s.userId);
      return ok({ user, session: { id: s.sessionId, expiresAt: s.expiresAt.toISOString() } });
    },
  }),
  authRoute({
    method: 'post', path: '/api/auth/change-password', summary: 'Change the password; ends the account\'s other sessions', productionLimit: 10,
    sessionOnly: true,
    body: z.object({ current_password: z.string().min(1).max(PASSWORD_MAX_LENGTH), new_password: Password }).strict(),
    responses: { 204: { description: 'Changed; this session stays signed in' }, ...UNAUTHORIZED, 500: problemResponse('credential_change_revocation_failed') },
    handler: async ({ req, deps, body }) => {
      const s = await requireSignedInSession(req, deps);
      await accounts.changePassword({ pool: deps.database.pool, authCache: deps.authCache }, s, { currentPassword: body.current_password, newPassword: body.new_password });
      return noContent();
    },
  }),
  authRoute({
    method: 'post', path: '/api/auth/set-password', summary: 'Set a first password on an account created without one', productionLimit: 10,
    sessionOnly: true,
    body: z.object({ new_password: Password }).strict(),
    responses: { 204: { description: 'Set' }, ...UNAUTHORIZED, 409: problemResponse('password_already_set'), 500: problemResponse('credential_change_revocation_failed') },
    handler: async ({ req, deps, body }) => {
      const s = await requireSignedInSession(req, deps);
      await accounts.setPassword({ pool: deps.database.pool, authCache: deps.authCache }, s, body.new_password);
      return noContent();
    },
  }),
  authRoute({
    method: 'post', path: '/api/auth/request-password-reset', summary: 'Ask for a password reset link', productionLimit: 5,
    body: z.object({ email: z.string().min(1).max(320) }).strict(),
    responses: {
      202: {
        description: 'Accepted whether or not an account has the address, with the same body and after the same time. delivery: email (mail is enabled: an account with this address gets the link by e-mail) or disabled (no SMTP_URL: nothing is sent; a development instance writes the link to DATA_DIR/reset-links.log). The token is never in the answer',
        schema: z.object({ status: z.literal('accepted'), delivery: z.enum(['email', 'disabled']) }),
      },
    },
    handler: async ({ deps, body }) => {
      const floor = new Promise<void>((resolve) => setTimeout(resolve, RESET_ANSWER_FLOOR_MS));
      const mailer = mailerFor(deps.config, deps.log);
      // the answer waits for the floor, not for the work: a slow database cannot tell the addresses apart
      void accounts.requestPasswordResetByEmail(deps.database.pool, body.email, mailer, deps.log).catch((err: unknown) => {
        deps.log.error('password-reset link not issued', { err });
      });
      await floor;
      return { status: 202, body: { status: 'accepted', delivery: mailer.enabled ? 'email' : 'disabled' } };
    },
  }),
  authRoute({
    method: 'post', path: '/api/auth/reset-password', summary: 'Set a new password with a reset token; ends every session of the account', productionLimit: 10,
    body: z.object({ token: z.string().min(1).max(200), new_password: Password }).strict(),
    responses: { 204: { description: 'Password replaced; sign in again' }, 500: problemResponse('credential_change_revocation_failed') },
    handler: async ({ deps, body }) => {
      await accounts.resetPassword({ pool: deps.database.pool, authCache: deps.authCache }, { token: body.token, newPassword: body.new_password });
      return noContent();
    },
  }),
  route({
    method: 'post', path: '/api/auth/bootstrap/redeem', summary: 'First-run bootstrap: create the owner, the first organization, and sign in', tag: 'Authentication',
    stage: 'auth', tenant: 'none', rateLimit: { perMinute: 5, by: 'ip' },
    body: z.object({
      token: z.string().min(1).max(1000),
      email: z.string().max(320),
      password: z.string().max(4096),
      name: z.string().trim().min(1).max(200),
      organization_name: z.string().trim().min(1).max(200).optional(),
    }).strict(),
    responses: {
      201: { description: 'Redeemed; the session cookie is set', schema: z.object({ user_id: z.string(), org_id: z.string(), space_id: z.string() }) },
      401: problemResponse('bootstrap_token_invalid'),
      410: problemResponse('bootstrap_token_unavailable'),
      422: problemResponse('bootstrap_signup_rejected (password policy)'),
    },
    handler: async (input) => {
      const { deps, body } = input;
      const store = { pool: deps.database.pool, authCache: deps.authCache, config: deps.config, bootstrapToken: deps.bootstrapToken };
      const r = await redeemBootstrap(store, body, clientOf(input));
      signIn(deps, input.res, r.session);
      return created({ user_id: r.userId, org_id: r.orgId, space_id: r.spaceId });
    },
  }),
];
