// What the oidc-* tests share: OAuth clients inserted as rows (the client routes are another
// module's), a small browser (cookie jar, redirects by hand, forms filled) that drives the
// provider's sign-in, consent and device pages as a person would, and openid-client (an
// independent relying party) configured against the app's issuer.
import assert from 'node:assert/strict';
import type pg from 'pg';
import * as oidc from 'openid-client';

export const REDIRECT = 'http://127.0.0.1:9/callback';
export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

export interface ClientRow {
  id: string;
  level: 'instance' | 'org' | 'space';
  orgId?: string;
  spaceId?: string;
  scopes: string[];
  grantTypes?: string[];
  allowSignup?: boolean;
}

export async function aClient(pool: pg.Pool, c: ClientRow): Promise<string> {
  await pool.query(
    `INSERT INTO oauth_clients (id, level, org_id, space_id, name, redirect_uris, grant_types, token_endpoint_auth_method, scopes, allow_signup, registration)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'none', $8, $9, 'api')`,
    [c.id, c.level, c.orgId ?? null, c.spaceId ?? null, `App ${c.id}`, [REDIRECT], c.grantTypes ?? ['authorization_code', 'refresh_token', DEVICE_GRANT], c.scopes, c.allowSignup ?? false],
  );
  return c.id;
}

export async function relyingParty(issuer: string, clientId: string): Promise<oidc.Configuration> {
  return oidc.discovery(new URL(issuer), clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
}

const unescape = (s: string) => s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

interface Form {
  action: string;
  fields: Record<string, string>;
  body: string;
}

export function formsOf(html: string): Form[] {
  const out: Form[] = [];
  for (const m of html.matchAll(/<form([^>]*)>([\s\S]*?)<\/form>/g)) {
    const action = /action="([^"]*)"/.exec(m[1])?.[1] ?? '';
    const fields: Record<string, string> = {};
    for (const i of m[2].matchAll(/<input([^>]*)>/g)) {
      const name = /name="([^"]*)"/.exec(i[1])?.[1];
      const type = /type="([^"]*)"/.exec(i[1])?.[1];
      const value = /value="([^"]*)"/.exec(i[1])?.[1];
      if (name && type === 'hidden') fields[name] = unescape(value ?? '');
    }
    out.push({ action: unescape(action), fields, body: m[2] });
  }
  return out;
}

export interface Person {
  email: string;
  password: string;
}

export interface PageLog {
  status: number;
  url: string;
  html: string;
}

/** A browser: keeps cookies, follows redirects itself, and fills the provider's pages. */
export class Browser {
  cookies = new Map<string, string>();
  pages: PageLog[] = [];
  /** sent with every request (X-Forwarded-For, say, to be another client address behind a trusted proxy) */
  headers: Record<string, string> = {};

  constructor(private extraCookie?: string) {}

  private header(): string {
    const parts = [...this.cookies].map(([k, v]) => `${k}=${v}`);
    if (this.extraCookie) parts.push(this.extraCookie);
    return parts.join('; ');
  }

  private keep(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0];
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async go(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    const headers: Record<string, string> = { ...this.headers, cookie: this.header(), accept: 'text/html,*/*;q=0.8' };
    let body: string | undefined;
    if (init.form) {
      body = new URLSearchParams(init.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const res = await fetch(url, { method: init.method ?? 'GET', headers, body, redirect: 'manual' });
    this.keep(res);
    return res;
  }

  /**
   * Walks from url, signing in and consenting, until a redirect to `stopAt` (answered) or a page
   * that needs nothing more (null). `session: true` continues as the platform session.
   */
  async walk(url: string, person: Person | { session: true }, stopAt: string, opts: { deny?: boolean; userCode?: string } = {}): Promise<string | null> {
    let next: { url: string; method?: string; form?: Record<string, string> } | null = { url };
    for (let hops = 0; next && hops < 30; hops++) {
      const res = await this.go(next.url, { method: next.method, form: next.form });
      const base: string = next.url;
      next = null;
      if (res.status >= 300 && res.status < 400) {
        const location: string = new URL(res.headers.get('location')!, base).toString();
        if (location.startsWith(stopAt)) return location;
        next = { url: location };
        continue;
      }
      const html = await res.text();
      this.pages.push({ status: res.status, url: base, html });
      if (res.status >= 400) return null;
      const forms = formsOf(html);
      const target = (f: Form) => new URL(f.action || base, base).toString();
      const codeForm = forms.find((f) => f.body.includes('name="user_code"'));
      const confirmForm = forms.find((f) => f.body.includes('name="abort"'));
      const passwordForm = forms.find((f) => f.body.includes('name="password"'));
      const consentForm = forms.find((f) => f.body.includes('value="allow"'));
      if (codeForm) {
        next = { url: target(codeForm), method: 'POST', form: { ...codeForm.fields, user_code: opts.userCode ?? '' } };
      } else if (confirmForm) {
        next = { url: target(confirmForm), method: 'POST', form: { ...confirmForm.fields } };
      } else if (passwordForm) {
        if ('session' in person) {
          const sessionForm = forms.find((f) => f.fields.action === 'session');
          assert.ok(sessionForm, 'the sign-in page offers to continue as the platform session');
          next = { url: target(sessionForm), method: 'POST', form: { ...sessionForm.fields } };
        } else {
          next = { url: target(passwordForm), method: 'POST', form: { ...passwordForm.fields, email: person.email, password: person.password } };
        }
      } else if (consentForm) {
        next = { url: target(consentForm), method: 'POST', form: { ...consentForm.fields, action: opts.deny ? 'deny' : 'allow' } };
      }
    }
    return null;
  }

  lastPage(): PageLog | undefined {
    return this.pages.at(-1);
  }
}

export interface CodeFlow {
  /** absent when the pages stopped short of the redirect (see browser.lastPage()) */
  tokens?: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers;
  browser: Browser;
}

/** Authorization code with PKCE (S256) through the pages. */
export async function codeFlow(config: oidc.Configuration, person: Person | { session: true }, params: { scope: string; resource?: string; prompt?: string | null }, browser = new Browser()): Promise<CodeFlow> {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: params.scope,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    // null: no prompt parameter at all
    ...(params.prompt === null ? {} : { prompt: params.prompt ?? 'consent' }),
    ...(params.resource ? { resource: params.resource } : {}),
  });
  const back = await browser.walk(url.toString(), person, REDIRECT);
  if (!back) return { browser };
  const tokens = await oidc.authorizationCodeGrant(config, new URL(back), { pkceCodeVerifier: verifier, expectedState: state });
  return { tokens, browser };
}

export function jwtParts(token: string): { header: any; payload: any } {
  const [h, p] = token.split('.');
  return { header: JSON.parse(Buffer.from(h, 'base64url').toString()), payload: JSON.parse(Buffer.from(p, 'base64url').toString()) };
}
