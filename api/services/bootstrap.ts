// First-run bootstrap: the token printed at first start (or BOOTSTRAP_TOKEN) creates the owner's
// account, the first organization with its default team space and the owner's personal space,
// once. The single bootstrap_state row is locked for the redemption, so a concurrent one answers
// 409 bootstrap_redeem_in_progress instead of waiting.
import type pg from 'pg';
import { safeEqual, sha256Hex } from '../../lib/crypto.ts';
import { problem } from '../../lib/problem.ts';
import type { Config } from '../../lib/config.ts';
import { insertUser, type ClientInfo } from './accounts.ts';
import { changeIdentity, type IdentityStore } from './identity-change.ts';
import { createOrganization } from './organizations.ts';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './passwords.ts';
import { createSession, type NewSession } from './sessions.ts';

const STATE_ROW = 1;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface BootstrapStore extends IdentityStore {
  config: Config;
  bootstrapToken: string;
}

export interface BootstrapInput {
  token: string;
  email: string;
  password: string;
  name: string;
  organization_name?: string;
}

export interface Redemption {
  userId: string;
  orgId: string;
  spaceId: string;
  session: NewSession;
}

function tokenMatches(given: string, expected: string): boolean {
  // Hash both sides so the comparison takes the same time whatever the lengths.
  return expected !== '' && safeEqual(sha256Hex(given), sha256Hex(expected));
}

export async function isBootstrapRedeemed(pool: pg.Pool): Promise<boolean> {
  const { rowCount } = await pool.query('SELECT 1 FROM bootstrap_state WHERE id = $1 AND redeemed_at IS NOT NULL', [STATE_ROW]);
  return Boolean(rowCount);
}

export async function redeemBootstrap(store: BootstrapStore, input: BootstrapInput, from: ClientInfo): Promise<Redemption> {
  if (!tokenMatches(input.token, store.bootstrapToken)) throw problem('bootstrap_token_invalid', { detail: 'The bootstrap token does not match.' });
  if (await isBootstrapRedeemed(store.pool)) throw problem('bootstrap_token_unavailable', { detail: 'This instance has already been bootstrapped.' });
  const email = input.email.trim();
  if (!EMAIL.test(email)) throw problem('bootstrap_signup_rejected', { detail: 'The email address is not valid.', errors: [{ field: 'email', code: 'invalid_format', message: 'Not an email address.' }] });
  if (input.password.length < PASSWORD_MIN_LENGTH || input.password.length > PASSWORD_MAX_LENGTH) {
    throw problem('bootstrap_signup_rejected', {
      status: 422,
      detail: `The password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long.`,
      errors: [{ field: 'password', code: 'out_of_range', message: `Use ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters.` }],
    });
  }
  const owner = store.config.BOOTSTRAP_OWNER_EMAIL;
  if (owner && owner.toLowerCase() !== email.toLowerCase()) {
    throw problem('bootstrap_owner_email_mismatch', { detail: 'This instance names its owner by email: claim it with that address.' });
  }

  await store.pool.query('INSERT INTO bootstrap_state (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [STATE_ROW]);
  return changeIdentity(store, async (client) => {
    try {
      await client.query('SELECT 1 FROM bootstrap_state WHERE id = $1 FOR UPDATE NOWAIT', [STATE_ROW]);
    } catch (err) {
      if ((err as { code?: string }).code === '55P03') throw problem('bootstrap_redeem_in_progress', { detail: 'Another redemption is running; retry in a moment.' });
      throw err;
    }
    const state = await client.query('SELECT redeemed_at FROM bootstrap_state WHERE id = $1', [STATE_ROW]);
    if (state.rows[0].redeemed_at) throw problem('bootstrap_token_unavailable', { detail: 'This instance has already been bootstrapped.' });
    const existing = await client.query('SELECT 1 FROM users WHERE lower(email) = lower($1)', [email]);
    if (existing.rowCount) throw problem('bootstrap_user_exists', { detail: 'An account already exists for this email: sign in instead.' });

    const user = await insertUser(client, { email, password: input.password, name: input.name }).catch(() => {
      throw problem('bootstrap_signup_failed', { detail: 'The owner account could not be created.' });
    });
    // The derived name must fit the organization name's limit like a given one (200 characters).
    const derived = `${input.name.trim()}'s organization`;
    const orgName = input.organization_name?.trim() || (derived.length <= 200 ? derived : input.name.trim().slice(0, 200));
    const org = await createOrganization(client, { name: orgName, ownerUserId: user.id }).catch(() => {
      throw problem('bootstrap_org_failed', { detail: 'The owner account was prepared but the organization could not be created; nothing was kept.' });
    });
    await client.query('UPDATE bootstrap_state SET user_id = $2, org_id = $3, redeemed_at = now() WHERE id = $1', [STATE_ROW, user.id, org.organization.id]);
    const session = await createSession(client, user.id, from);
    return { userId: user.id, orgId: org.organization.id, spaceId: org.defaultSpaceId, session };
  });
}
