// The provider's pages: sign-in, consent, device code entry and confirmation, errors. Small,
// server-rendered, no script and no external asset; each response carries a strict
// Content-Security-Policy whose only allowance is the page's own style element (by nonce).
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { scopeDescription } from './scopes.ts';

const STYLE = 'body{font:15px/1.45 system-ui,sans-serif;max-width:26rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}'
  + 'h1{font-size:1.3rem}label{display:block;margin:.6rem 0 .2rem}input{width:100%;padding:.45rem;box-sizing:border-box}'
  + 'button{margin:.8rem .4rem 0 0;padding:.45rem .9rem}.err{color:#a00}code{font-size:1.3rem}li code{font-size:.85rem}ul{padding-left:1.2rem}';

export function escapeHtml(s: unknown): string {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** A fresh nonce on the request, and the policy naming it (and the origins a form may end at). */
export function applyCsp(req: IncomingMessage, res: ServerResponse, formTargets: string[] = []): string {
  const nonce = randomBytes(16).toString('base64');
  (req as IncomingMessage & { cspNonce?: string }).cspNonce = nonce;
  const targets = ["'self'", ...formTargets].join(' ');
  // script-src names the nonce (used by nothing of ours) so that the provider can add the hash of
  // its one inline script, the auto-submit of a form_post page (verification_uri_complete, and
  // response_mode=form_post); without the directive that script would be refused
  res.setHeader('Content-Security-Policy', `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src 'none'; form-action ${targets}; frame-ancestors 'none'; base-uri 'none'`);
  res.setHeader('X-Frame-Options', 'DENY');
  // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with the pages'
  // form POSTs, which the cookie-origin check refuses for a person signed in (the session cookie);
  // same-origin still sends no referrer to another site (a client's redirect URI)
  res.setHeader('Referrer-Policy', 'same-origin');
  res.setHeader('Cache-Control', 'no-store');
  return nonce;
}

function nonceOf(req: IncomingMessage): string {
  return (req as IncomingMessage & { cspNonce?: string }).cspNonce ?? '';
}

export function page(req: IncomingMessage, title: string, body: string): string {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">`
    + `<title>${escapeHtml(title)}</title><style nonce="${nonceOf(req)}">${STYLE}</style></head><body>${body}</body></html>`;
}

type Ctx = { req: IncomingMessage };

export function errorPage(ctx: Ctx, error: unknown, description: unknown): string {
  return page(ctx.req, 'Error', `<h1>Something went wrong</h1><p class="err">${escapeHtml(error)}</p><p>${escapeHtml(description ?? '')}</p>`);
}

/**
 * The code entry page: one form of ours carrying the provider's action and xsrf value (the
 * provider's own form has an input of its own, which would post a second, empty user_code).
 */
export function deviceInputPage(ctx: Ctx, form: string, err?: { name?: string; userCode?: string }): string {
  const msg = err ? '<p class="err">That code is not valid or has expired. Try again.</p>' : '<p>Enter the code shown on your device.</p>';
  const action = /\baction="([^"]*)"/.exec(form)?.[1] ?? '';
  const xsrf = /name="xsrf" value="([^"]*)"/.exec(form)?.[1] ?? '';
  const own = `<form method="post" action="${escapeHtml(action)}"><input type="hidden" name="xsrf" value="${escapeHtml(xsrf)}">`
    + '<label for="user_code">Code</label><input id="user_code" name="user_code" autocomplete="off" autocapitalize="characters" spellcheck="false" autofocus>'
    + '<button type="submit">Continue</button></form>';
  return page(ctx.req, 'Device sign-in', `<h1>Device sign-in</h1>${msg}${own}`);
}

/** The page of a client IP that entered too many wrong codes. */
export function deviceTooManyPage(ctx: Ctx, retryAfter: number): string {
  return page(ctx.req, 'Device sign-in', `<h1>Device sign-in</h1><p class="err">Too many wrong codes from this address. Try again in ${Math.ceil(retryAfter / 60)} minute(s).</p>`);
}

export function deviceConfirmPage(ctx: Ctx, form: string, clientName: string, userCode: string): string {
  const withButtons = form.replace('</form>', '<button type="submit" autofocus>Continue</button><button type="submit" name="abort" value="yes">Cancel</button></form>');
  return page(ctx.req, 'Confirm device', `<h1>Confirm device</h1><p><strong>${escapeHtml(clientName)}</strong> asks to sign in. Your device shows:</p><p><code>${escapeHtml(userCode)}</code></p><p>Cancel if the code differs or you did not start this.</p>${withButtons}`);
}

export function deviceSuccessPage(ctx: Ctx): string {
  return page(ctx.req, 'Signed in', '<h1>Done</h1><p>Your device is signed in. You can close this page.</p>');
}

export function signInPage(req: IncomingMessage, opts: { action: string; clientName: string; sessionEmail?: string; error?: string }): string {
  const continueAs = opts.sessionEmail
    ? `<form method="post" action="${escapeHtml(opts.action)}"><input type="hidden" name="action" value="session"><button type="submit">Continue as ${escapeHtml(opts.sessionEmail)}</button></form><p>or sign in with another account:</p>`
    : '';
  return page(req, 'Sign in', `<h1>Sign in to ${escapeHtml(opts.clientName)}</h1>${opts.error ? `<p class="err">${escapeHtml(opts.error)}</p>` : ''}${continueAs}`
    + `<form method="post" action="${escapeHtml(opts.action)}"><input type="hidden" name="action" value="password">`
    + '<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required>'
    + '<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>'
    + '<button type="submit">Sign in</button></form>'
    + `<form method="post" action="${escapeHtml(opts.action)}"><input type="hidden" name="action" value="deny"><button type="submit">Cancel</button></form>`);
}

export function consentPage(req: IncomingMessage, opts: { action: string; clientName: string; instance: string; scopes: string[]; resources: string[] }): string {
  const list = opts.scopes.map((s) => `<li>${escapeHtml(scopeDescription(s) ?? s)} <small>(<code>${escapeHtml(s)}</code>)</small></li>`).join('');
  const where = opts.resources.map((r) => `<li>${escapeHtml(r)}</li>`).join('');
  return page(req, 'Allow access', `<h1>Allow ${escapeHtml(opts.clientName)}?</h1><p><strong>${escapeHtml(opts.clientName)}</strong> asks to use your account on <strong>${escapeHtml(opts.instance)}</strong> to:</p><ul>${list}</ul>${where ? `<p>at</p><ul>${where}</ul>` : ''}`
    + `<form method="post" action="${escapeHtml(opts.action)}"><button type="submit" name="action" value="allow">Allow</button><button type="submit" name="action" value="deny">Deny</button></form>`);
}
