// With the oidc module, a password change or reset also ends what the provider issued to the
// account, and to the end-users the person signed in as through space clients: refresh and access
// tokens, grants, device codes, CLI and provider sessions. Every such
// row carries the account in oidc_payloads.account_id. The delete runs in the transaction that
// changes the password, so a failure leaves the password unchanged (500
// credential_change_revocation_failed, credential-change.ts).
import { credentialRevokers, onCredentialChange, type CredentialChange } from '../credential-change.ts';

export async function revokeOidcCredentials(change: CredentialChange): Promise<void> {
  // the person's own rows, and those of the end-users they signed in as through space clients (an
  // end-user account is the person's email in that space: interaction.ts, accountFor)
  await change.client.query(
    `DELETE FROM oidc_payloads
      WHERE account_id = $1
         OR account_id IN (SELECT e.id FROM end_users e JOIN users u ON e.external_id = u.email WHERE u.id = $1)`,
    [change.userId],
  );
}

/** Registers the revoker once per process (several apps may load the module in one process). */
export function registerOidcRevocation(): void {
  if (!credentialRevokers.includes(revokeOidcCredentials)) onCredentialChange(revokeOidcCredentials);
}
