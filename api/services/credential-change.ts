// What else a password change or reset revokes. Sessions and reset links are ended by the
// accounts service itself; modules that issue their own credentials (the oidc module's refresh
// and access tokens, CLI sessions, device codes) register a revoker here. Revokers run inside the
// transaction that changes the password: if one fails, nothing changes and the request answers
// 500 credential_change_revocation_failed.
import type pg from 'pg';
import { problem } from '../../lib/problem.ts';

export interface CredentialChange {
  /** the open transaction that changes the password */
  client: pg.PoolClient;
  userId: string;
  reason: 'password_changed' | 'password_reset' | 'password_set';
  /** the session that made the change and stays signed in (password change only) */
  keepSessionId?: string;
}

export type CredentialRevoker = (change: CredentialChange) => Promise<void>;

/** Revokers called on every credential change, in registration order. */
export const credentialRevokers: CredentialRevoker[] = [];

export function onCredentialChange(revoker: CredentialRevoker): () => void {
  credentialRevokers.push(revoker);
  return () => {
    const i = credentialRevokers.indexOf(revoker);
    if (i >= 0) credentialRevokers.splice(i, 1);
  };
}

export async function runCredentialRevokers(change: CredentialChange): Promise<void> {
  for (const revoke of credentialRevokers) {
    try {
      await revoke(change);
    } catch {
      throw problem('credential_change_revocation_failed', { detail: 'Credentials issued to this account could not be revoked; nothing was changed.' });
    }
  }
}
