// Writes made with the session cookie must come from the instance's own pages (or a trusted
// origin). Browsers send Origin on every request but GET and HEAD; a page of another origin on the
// same site (another port, a sibling subdomain: SameSite=Lax still sends the cookie) is refused
// here, whatever the route, so no cookie-authenticated write depends on its headers or body type
// for protection. Requests without Origin (non-browser clients) and requests carrying their own
// Authorization are not cookie-driven forgeries and pass.
import { problem } from '../../lib/problem.ts';
import type { Request } from '../http.ts';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

export function cookieWriteOrigin(opts: { cookieName: string; publicUrl?: string; trustedOrigins: readonly string[] }) {
  const allowed = new Set(opts.trustedOrigins.map((o) => o.replace(/\/+$/, '')));
  if (opts.publicUrl) allowed.add(new URL(opts.publicUrl).origin);
  const marker = `${opts.cookieName}=`;
  return function checkCookieWriteOrigin(req: Request): void {
    if (SAFE.has(req.method)) return;
    const origin = req.headers.origin;
    if (typeof origin !== 'string' || req.headers.authorization) return;
    if (!(req.headers.cookie ?? '').includes(marker)) return;
    if (allowed.has(origin)) return;
    // the page's own origin: the host the browser addressed (both headers are set by the browser)
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined; // "null" (sandboxed frames, opaque redirects) and anything malformed
    }
    if (host !== undefined && host === req.headers.host) return;
    throw problem('forbidden', { param: 'Origin', detail: 'A write with the session cookie must come from the instance\'s own pages or a trusted origin.' });
  };
}
