// The interaction pages: sign-in (the platform's email and password, or the platform session
// already in the browser) and consent. Who signs in depends on the client's level: a person for
// instance clients, a member of the client's organization for org clients, and for space clients
// the end-user of that space whose externalId is the person's email (created on first sign-in
// only when the client allows sign-up).
import type Provider from 'oidc-provider';
import type { AppDeps } from '../../deps.ts';
import type { Request, Response } from '../../http.ts';
import { newId } from '../../../lib/ids.ts';
import { readSignedInSession } from '../../services/sessions.ts';
import { verifyPassword } from '../../services/passwords.ts';
import { applyCsp, consentPage, errorPage, signInPage } from './pages.ts';
import { oauthRateLimit } from './rate-limit.ts';
import { OIDC_SCOPES } from './scopes.ts';

const FORM_LIMIT = 16 * 1024;

class SignInRefused extends Error {}

async function readForm(req: Request): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > FORM_LIMIT) throw new SignInRefused('The form is too large.');
    chunks.push(c);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function send(res: Response, status: number, html: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.end(html);
}

function originsOf(uris: unknown): string[] {
  const out = new Set<string>();
  for (const u of Array.isArray(uris) ? uris : []) {
    try {
      const { protocol, origin } = new URL(String(u));
      if (protocol === 'http:' || protocol === 'https:') out.add(origin);
    } catch { /* not a URL: nothing to allow */ }
  }
  return [...out];
}

/** The person behind the email and password, or behind the platform session cookie. */
async function personOf(deps: AppDeps, req: Request, form: URLSearchParams): Promise<{ id: string; email: string; name: string }> {
  if (form.get('action') === 'session') {
    const session = await readSignedInSession(req, deps);
    if (!session) throw new SignInRefused('Your platform session has ended; sign in again.');
    return { id: session.userId, email: session.email, name: session.name };
  }
  const email = (form.get('email') ?? '').trim();
  const password = form.get('password') ?? '';
  if (!email || email.length > 320 || password.length > 1024) throw new SignInRefused('The email or password is wrong.');
  const { rows } = await deps.database.pool.query('SELECT id, email, name, password_hash FROM users WHERE lower(email) = lower($1)', [email]);
  const row = rows[0];
  const valid = await verifyPassword(password, row?.password_hash ?? null);
  if (!row || !valid) throw new SignInRefused('The email or password is wrong.');
  return { id: row.id, email: row.email, name: row.name };
}

/** The account id the provider will know: the person, or their end-user in the client's space. */
async function accountFor(deps: AppDeps, client: Record<string, any>, person: { id: string; email: string; name: string }): Promise<string> {
  const pool = deps.database.pool;
  if (client.platform_level === 'org') {
    const { rowCount } = await pool.query('SELECT 1 FROM org_members WHERE user_id = $1 AND org_id = $2', [person.id, client.platform_org_id]);
    if (!rowCount) throw new SignInRefused('This application belongs to an organization you are not a member of.');
  }
  if (client.platform_level !== 'space') return person.id;
  const spaceId = client.platform_space_id as string;
  const found = await pool.query('SELECT id FROM end_users WHERE space_id = $1 AND external_id = $2', [spaceId, person.email]);
  if (found.rows[0]) return found.rows[0].id;
  if (client.platform_allow_signup !== true) throw new SignInRefused('You have no account with this application, and it does not take sign-ups.');
  const inserted = await pool.query(
    `INSERT INTO end_users (id, org_id, space_id, external_id, name)
     SELECT $1, s.org_id, s.id, $3, $4 FROM spaces s WHERE s.id = $2 AND s.kind = 'team'
     ON CONFLICT DO NOTHING RETURNING id`,
    [newId('eu'), spaceId, person.email, person.name.slice(0, 200) || person.email],
  );
  if (inserted.rows[0]) return inserted.rows[0].id;
  const again = await pool.query('SELECT id FROM end_users WHERE space_id = $1 AND external_id = $2', [spaceId, person.email]);
  if (!again.rows[0]) throw new SignInRefused('This application cannot take sign-ups.');
  return again.rows[0].id;
}

/** How the pages name this instance: the platform at its address. */
function instanceName(issuer: string): string {
  try {
    return `Agent Platform at ${new URL(issuer).host}`;
  } catch {
    return 'Agent Platform';
  }
}

export function createInteractionHandler(deps: AppDeps, providerOf: (req: Request) => Promise<Provider>) {
  return async function interaction(req: Request, res: Response, uid: string): Promise<void> {
    const provider = await providerOf(req);
    let details: Awaited<ReturnType<Provider['interactionDetails']>>;
    try {
      details = await provider.interactionDetails(req, res);
    } catch {
      applyCsp(req, res);
      return send(res, 400, errorPage({ req }, 'invalid_request', 'This sign-in request has expired or was opened in another browser. Start again from the application.'));
    }
    if (details.uid !== uid) {
      applyCsp(req, res);
      return send(res, 400, errorPage({ req }, 'invalid_request', 'This sign-in request does not match the page.'));
    }
    const client = (await provider.Client.find(String(details.params.client_id))) as unknown as Record<string, any> | undefined;
    if (!client) {
      applyCsp(req, res);
      return send(res, 400, errorPage({ req }, 'invalid_client', 'The application is no longer registered.'));
    }
    applyCsp(req, res, originsOf(client.redirectUris));
    const action = `${req.path}`;
    const clientName = String(client.clientName ?? client.clientId);
    const prompt = details.prompt.name;

    if (req.method === 'GET') {
      if (prompt === 'login') {
        const session = await readSignedInSession(req, deps);
        return send(res, 200, signInPage(req, { action, clientName, sessionEmail: session?.email }));
      }
      const d = details.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
      // what the request asks and the client may get (consent may be asked again for scopes
      // already granted: offline_access always asks), then anything else the grant lacks
      const offered = new Set<string>([...OIDC_SCOPES, ...(Array.isArray(client.platform_scopes) ? client.platform_scopes : [])]);
      const asked = String(details.params.scope ?? '').split(' ').filter((s) => offered.has(s));
      const scopes = [...asked, ...(d.missingOIDCScope ?? []), ...Object.values(d.missingResourceScopes ?? {}).flat()];
      return send(res, 200, consentPage(req, { action, clientName, instance: instanceName(provider.issuer), scopes: [...new Set(scopes)], resources: Object.keys(d.missingResourceScopes ?? {}) }));
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'GET, POST');
      return send(res, 405, errorPage({ req }, 'method_not_allowed', 'Use GET or POST.'));
    }

    let form: URLSearchParams;
    try {
      form = await readForm(req);
    } catch {
      return send(res, 413, errorPage({ req }, 'invalid_request', 'The form is too large.'));
    }
    if (form.get('action') === 'deny') {
      await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'The request was refused.' }, { mergeWithLastSubmission: false });
      return;
    }
    if (prompt === 'login') {
      if (await oauthRateLimit(deps, req, res, 'signin')) return;
      try {
        const person = await personOf(deps, req, form);
        const accountId = await accountFor(deps, client, person);
        const current = details.session as { accountId?: string; cookie?: string } | undefined;
        if (current?.accountId && current.accountId !== accountId) {
          // another account signs in (an end-user's provider session, say): the provider session
          // is replaced rather than ended through a scripted logout page
          const pending = await provider.Interaction.find(uid);
          if (pending) {
            delete (pending as { session?: unknown }).session;
            await pending.save(Math.max(1, pending.exp - Math.floor(Date.now() / 1000)));
          }
          if (current.cookie) await (provider.Session as unknown as { adapter: { destroy(id: string): Promise<void> } }).adapter.destroy(current.cookie);
        }
        await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
      } catch (err) {
        if (!(err instanceof SignInRefused)) throw err;
        const session = await readSignedInSession(req, deps);
        return send(res, 401, signInPage(req, { action, clientName, sessionEmail: session?.email, error: err.message }));
      }
      return;
    }
    if (prompt === 'consent' && form.get('action') === 'allow') {
      const { session, params, grantId, prompt: { details: missing } } = details;
      const accountId = session?.accountId;
      if (!accountId) return send(res, 400, errorPage({ req }, 'invalid_request', 'Sign in first.'));
      const grant = grantId ? await provider.Grant.find(grantId) : new provider.Grant({ accountId, clientId: String(params.client_id) });
      if (!grant) return send(res, 400, errorPage({ req }, 'invalid_request', 'This grant has ended; start again.'));
      const m = missing as { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };
      const oidcScopes = (m.missingOIDCScope ?? []).filter((s) => (OIDC_SCOPES as readonly string[]).includes(s));
      if (oidcScopes.length) grant.addOIDCScope(oidcScopes.join(' '));
      if (m.missingOIDCClaims?.length) grant.addOIDCClaims(m.missingOIDCClaims);
      for (const [resource, scopes] of Object.entries(m.missingResourceScopes ?? {})) grant.addResourceScope(resource, scopes.join(' '));
      const id = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId: id } }, { mergeWithLastSubmission: true });
      return;
    }
    return send(res, 400, errorPage({ req }, 'invalid_request', 'Unknown action.'));
  };
}
