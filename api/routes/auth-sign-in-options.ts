// Sign-in options besides the password (/api/auth/*, outside the authentication chain, limited per
// client IP in production like the other auth routes): e-mail verification, magic links, and social
// sign-in through the operator's OpenID Connect provider. What this instance offers is listed by
// GET /api/auth/sign-in/options.
import { z } from 'zod';
import type { AppDeps } from '../deps.ts';
import type { Request } from '../http.ts';
import { mailerFor } from '../../lib/mail.ts';
import { problem } from '../../lib/problem.ts';
import { ok, type Reply } from '../route.ts';
import { readCookie } from '../middleware/authenticate.ts';
import { mailVerificationLink, resendEmailVerification, verifyEmail } from '../services/email-verification.ts';
import { magicLinksOffered, requestMagicLink, signInWithMagicLink } from '../services/magic-links.ts';
import { requireSignedInSession, signIn } from '../services/sessions.ts';
import {
  completeSocialSignIn, isSafeReturnTo, socialProviderOf, socialStateCookie, socialStateCookieName, startSocialSignIn, type SocialDeps,
} from '../services/social-sign-in.ts';
import { authRoute, clientOf, problemResponse, SignedIn, signedInReply, User } from './auth.ts';

const Accepted = z.object({
  status: z.literal('accepted'),
  delivery: z.enum(['email', 'disabled']).describe('email: mail is enabled and a message goes out when one applies; disabled: nothing is sent'),
});
const Token = z.object({ token: z.string().min(1).max(200) }).strict();
const ReturnTo = z.object({
  return_to: z.string().max(500).optional().describe('a path on this platform to send the browser to once signed in (default: answer with the session as JSON)'),
});
const Redirect = { description: 'To the identity provider (sets a short-lived state cookie)', headers: ['Location'] };
const ProviderUrl = { description: 'With Accept: application/json: the identity provider\'s URL to open (sets the same state cookie)', schema: z.object({ url: z.string() }) };

function socialDepsOf(deps: AppDeps): SocialDeps {
  return {
    pool: deps.database.pool, authCache: deps.authCache, config: deps.config, secrets: deps.secrets, log: deps.log,
    egress: { allowInternalHosts: deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints: deps.platformEndpoints },
  };
}

function returnToOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!isSafeReturnTo(value)) throw problem('invalid_request', { param: 'return_to', detail: 'return_to must be a path on this platform (starting with a single /).' });
  return value;
}

/** A browser is redirected; a client asking for JSON gets the URL to open (the state cookie either way). */
async function redirectToProvider(req: Request, deps: AppDeps, opts: { linkUserId?: string; returnTo?: string }): Promise<Reply> {
  const flow = await startSocialSignIn(socialDepsOf(deps), opts);
  const headers = { 'Set-Cookie': socialStateCookie(deps.config, flow.state), 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' };
  if (String(req.headers.accept ?? '').includes('application/json')) return ok({ url: flow.location }, headers);
  return { status: 302, headers: { ...headers, Location: flow.location } };
}

export const signInOptionRoutes = [
  authRoute({
    method: 'get', path: '/api/auth/sign-in/options', summary: 'The sign-in options this instance offers', productionLimit: 300,
    responses: {
      200: {
        description: 'Password sign-in always; magic links when enabled with mail; social sign-in when a provider is configured',
        schema: z.object({
          password: z.literal(true),
          magic_link: z.boolean(),
          email_verification: z.enum(['required', 'optional']),
          social: z.object({ name: z.string(), url: z.string() }).nullable(),
        }),
      },
    },
    handler: async ({ deps }) => {
      const provider = socialProviderOf(deps.config);
      return ok({
        password: true,
        magic_link: magicLinksOffered(deps.config, mailerFor(deps.config, deps.log)),
        email_verification: deps.config.AUTH_EMAIL_VERIFICATION,
        social: provider ? { name: provider.name, url: '/api/auth/sign-in/social' } : null,
      });
    },
  }),
  authRoute({
    method: 'post', path: '/api/auth/verify-email', summary: 'Verify the account\'s e-mail address with the mailed token', productionLimit: 10,
    body: Token,
    responses: { 200: { description: 'Verified (this does not sign in)', schema: z.object({ user: User }) }, 400: problemResponse('invalid_request: the link is invalid, used or expired') },
    handler: async ({ deps, body }) => ok({ user: await verifyEmail(deps.database.pool, body.token) }),
  }),
  authRoute({
    method: 'post', path: '/api/auth/send-verification-email', summary: 'Send a new verification link', productionLimit: 5,
    body: z.object({ email: z.string().min(1).max(320) }).strict(),
    responses: { 202: { description: 'Accepted whether or not an unverified account has the address', schema: Accepted } },
    handler: async ({ deps, body }) => {
      const mailer = mailerFor(deps.config, deps.log);
      const issued = await resendEmailVerification(deps.database.pool, body.email);
      if (issued) mailVerificationLink(mailer, deps.log, issued.email, issued.token);
      return { status: 202, body: { status: 'accepted', delivery: mailer.enabled ? 'email' : 'disabled' } };
    },
  }),
  authRoute({
    method: 'post', path: '/api/auth/sign-in/magic-link', summary: 'E-mail a single-use sign-in link', productionLimit: 5,
    body: z.object({ email: z.email().max(320) }).strict(),
    responses: {
      202: {
        description: 'Accepted whether or not an account has the address; delivery disabled when magic links are off or mail is not configured. A newcomer\'s link creates the account where AUTH_ALLOWED_SIGNUP_DOMAINS allows it (otherwise nothing is sent)',
        schema: Accepted,
      },
    },
    handler: async ({ deps, body }) => {
      const mailer = mailerFor(deps.config, deps.log);
      await requestMagicLink(deps.database.pool, deps.config, mailer, deps.log, body.email);
      return { status: 202, body: { status: 'accepted', delivery: magicLinksOffered(deps.config, mailer) ? 'email' : 'disabled' } };
    },
  }),
  authRoute({
    method: 'post', path: '/api/auth/magic-link/verify', summary: 'Sign in with a magic link\'s token; sets the session cookie', productionLimit: 10,
    body: Token,
    responses: {
      200: { description: 'Signed in (the account was created if the link was for a newcomer); the session cookie is set', schema: SignedIn },
      400: problemResponse('invalid_request: the link is invalid, used or expired'),
      403: problemResponse('signup_domain_not_allowed'),
    },
    handler: async (input) => {
      const { deps, body } = input;
      const store = { pool: deps.database.pool, authCache: deps.authCache, config: deps.config };
      return signedInReply(200, input, await signInWithMagicLink(store, body.token, clientOf(input)));
    },
  }),
  authRoute({
    method: 'get', path: '/api/auth/sign-in/social', summary: 'Sign in with the configured OpenID Connect provider: redirects to it', productionLimit: 30,
    query: ReturnTo,
    responses: { 200: ProviderUrl, 302: Redirect, 404: problemResponse('not_found: social sign-in is not configured'), 502: problemResponse('bad_gateway: the provider cannot be reached') },
    handler: async ({ req, deps, query }) => redirectToProvider(req, deps, { returnTo: returnToOf(query.return_to) }),
  }),
  authRoute({
    method: 'get', path: '/api/auth/link/social', summary: 'Link the configured OpenID Connect provider\'s account to the signed-in account: redirects to it', productionLimit: 30,
    sessionOnly: true,
    query: ReturnTo,
    responses: { 200: ProviderUrl, 302: Redirect, 401: problemResponse('unauthorized: no valid session'), 404: problemResponse('not_found: social sign-in is not configured'), 502: problemResponse('bad_gateway') },
    handler: async ({ req, deps, query }) => {
      const session = await requireSignedInSession(req, deps);
      return redirectToProvider(req, deps, { linkUserId: session.userId, returnTo: returnToOf(query.return_to) });
    },
  }),
  authRoute({
    method: 'get', path: '/api/auth/callback/social', summary: 'The OpenID Connect provider\'s redirect back; signs in', productionLimit: 30,
    query: z.object({
      code: z.string().max(2000).optional(), state: z.string().max(200).optional(), iss: z.string().max(2000).optional(),
      error: z.string().max(200).optional(), error_description: z.string().max(2000).optional(),
    }),
    responses: {
      200: { description: 'Signed in; the session cookie is set', schema: SignedIn },
      302: { description: 'Signed in; to the return_to path given at the start', headers: ['Location'] },
      400: problemResponse('invalid_request: unknown, used or expired state, or one from another browser'),
      401: problemResponse('unauthorized: the provider refused, or its answer failed verification'),
      403: problemResponse('forbidden (the address belongs to an account and is not verified by the provider) or signup_domain_not_allowed'),
      502: problemResponse('bad_gateway: the provider cannot be reached'),
    },
    handler: async (input) => {
      const { req, deps } = input;
      const search = new URL(req.url, 'http://callback.invalid').searchParams;
      const result = await completeSocialSignIn(socialDepsOf(deps), search, readCookie(req, socialStateCookieName(deps.config)), clientOf(input));
      input.res.appendHeader('Set-Cookie', socialStateCookie(deps.config, null));
      if (result.returnTo) {
        signIn(deps, input.res, result.session);
        return { status: 302, headers: { Location: result.returnTo, 'Cache-Control': 'no-store' } };
      }
      return signedInReply(200, input, result);
    },
  }),
];

