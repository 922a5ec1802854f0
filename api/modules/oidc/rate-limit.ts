// Per-IP limits of the OAuth endpoints. A refused call is answered the OAuth way (RFC 6749 section
// 5.2 shape): 429, Retry-After and {"error":"temporarily_unavailable","error_description":...},
// never a problem document. The registration route (RFC 7591) reuses oauthRateLimit('register').
import type { Response } from '../../http.ts';
import type { Request } from '../../http.ts';
import type { AppDeps } from '../../deps.ts';

/** Requests per minute per client IP. */
export const OAUTH_RATE_LIMITS = {
  authorize: 60,
  token: 120,
  introspect: 300,
  revoke: 60,
  register: 20,
  // the sign-in form of the interaction pages (password guessing)
  signin: 20,
} as const;

export type OAuthLimitedEndpoint = keyof typeof OAUTH_RATE_LIMITS;
const WINDOW_MS = 60_000;

/**
 * Counts the request against its endpoint's per-IP bucket. Returns true when the limit is
 * exceeded: the 429 has then been sent and the caller must not answer again.
 */
export async function oauthRateLimit(deps: Pick<AppDeps, 'cache'>, req: Request, res: Response, endpoint: OAuthLimitedEndpoint): Promise<boolean> {
  const max = OAUTH_RATE_LIMITS[endpoint];
  const { count, resetMs } = await deps.cache.increment(`rl:oauth:${endpoint}:ip:${req.ctx.ip}`, WINDOW_MS);
  const reset = Math.max(1, Math.ceil(resetMs / 1000));
  res.setHeader('RateLimit-Policy', `${max};w=60`);
  res.setHeader('RateLimit', `limit=${max}, remaining=${Math.max(0, max - count)}, reset=${reset}`);
  if (count <= max) return false;
  const body = JSON.stringify({ error: 'temporarily_unavailable', error_description: `Too many ${endpoint} requests from this address; retry in ${reset} s.` });
  res.statusCode = 429;
  res.setHeader('Retry-After', String(reset));
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', String(Buffer.byteLength(body)));
  res.end(body);
  return true;
}

/**
 * Wrong user codes on the device code entry page, per client IP: after DEVICE_CODE_ATTEMPTS.max
 * wrong (unknown, expired or used) codes within the window, the page answers 429 until the window
 * ends. A user code is 8 characters of 20 (about 2.6e10), so guessing one in time is hopeless.
 */
export const DEVICE_CODE_ATTEMPTS = { max: 10, windowSeconds: 15 * 60 } as const;
const deviceKey = (req: Request) => `rl:oauth:device-code:ip:${req.ctx.ip}`;

/** Seconds until this address may enter codes again, or 0 when it may now. */
export async function deviceCodeWait(deps: Pick<AppDeps, 'cache'>, req: Request): Promise<number> {
  const spent = Number(await deps.cache.get(deviceKey(req)) ?? 0);
  if (spent < DEVICE_CODE_ATTEMPTS.max) return 0;
  // counting the refused try too keeps the key (and its window) as it is
  const { resetMs } = await deps.cache.increment(deviceKey(req), DEVICE_CODE_ATTEMPTS.windowSeconds * 1000);
  return Math.max(1, Math.ceil(resetMs / 1000));
}

/** Counts one wrong code from this address. */
export async function countWrongDeviceCode(deps: Pick<AppDeps, 'cache'>, req: Request): Promise<void> {
  await deps.cache.increment(deviceKey(req), DEVICE_CODE_ATTEMPTS.windowSeconds * 1000);
}
