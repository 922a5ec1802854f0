// The provider's ES256 signing keys: generated on first start, the private JWK sealed with the
// instance key in oidc_signing_keys. rotateSigningKey() adds a new key and retires the others;
// a retired key is still published in the JWKS (and accepted by the verifier) until every token
// it signed has expired, then it is deleted.
import { generateKeyPairSync, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import type pg from 'pg';
import type { SecretBox } from '../../../lib/crypto.ts';
import { inTransaction } from '../../../db/transaction.ts';

/** Tokens signed by a key live at most this long after it was retired (access and ID tokens: 1 h). */
export const RETIRED_KEY_GRACE_SECONDS = 2 * 3600;

export interface SigningKey {
  kid: string;
  /** the private JWK; retired keys carry key_ops ["verify"] so the provider never signs with them */
  jwk: Record<string, unknown>;
  publicKey: KeyObject;
  retired: boolean;
}

function newKey(): { kid: string; jwk: Record<string, unknown> } {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const kid = randomBytes(12).toString('base64url');
  return { kid, jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' } };
}

async function insertKey(db: pg.Pool | pg.PoolClient, secrets: SecretBox): Promise<void> {
  const k = newKey();
  await db.query('INSERT INTO oidc_signing_keys (kid, alg, private_jwk_sealed) VALUES ($1, $2, $3)', [k.kid, 'ES256', secrets.seal(JSON.stringify(k.jwk))]);
}

/** The live keys, newest active first; creates the first key when there is none. */
export async function loadSigningKeys(pool: pg.Pool, secrets: SecretBox): Promise<SigningKey[]> {
  const read = () => pool.query(
    `SELECT kid, private_jwk_sealed, retired_at FROM oidc_signing_keys
      WHERE retired_at IS NULL OR retired_at > now() - make_interval(secs => $1)
      ORDER BY (retired_at IS NULL) DESC, created_at DESC`,
    [RETIRED_KEY_GRACE_SECONDS],
  );
  let { rows } = await read();
  if (!rows.some((r) => r.retired_at === null)) {
    // two instances starting at once: the advisory lock lets one create the key, the other reads it
    await inTransaction(pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext('oidc_signing_keys'))");
      const again = await client.query('SELECT 1 FROM oidc_signing_keys WHERE retired_at IS NULL');
      if (!again.rowCount) await insertKey(client, secrets);
    });
    ({ rows } = await read());
  }
  return rows.map((r) => {
    const jwk = JSON.parse(secrets.open(r.private_jwk_sealed)) as Record<string, unknown>;
    const retired = r.retired_at !== null;
    const { d: _d, ...pub } = jwk;
    return {
      kid: r.kid,
      jwk: retired ? { ...jwk, key_ops: ['verify'] } : jwk,
      publicKey: createPublicKey({ key: pub as any, format: 'jwk' }),
      retired,
    };
  });
}

/**
 * Rotation: a new active key, the previous ones retired (published until their tokens expire),
 * keys retired past the grace period deleted. Returns the new key's id. Each API process signs
 * with the new key once it reloads its keys (reloadKeys on the module, or a restart).
 */
export async function rotateSigningKey(pool: pg.Pool, secrets: SecretBox): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query("SELECT pg_advisory_xact_lock(hashtext('oidc_signing_keys'))");
    await client.query('UPDATE oidc_signing_keys SET retired_at = now() WHERE retired_at IS NULL');
    await client.query('DELETE FROM oidc_signing_keys WHERE retired_at < now() - make_interval(secs => $1)', [RETIRED_KEY_GRACE_SECONDS]);
    const k = newKey();
    await client.query('INSERT INTO oidc_signing_keys (kid, alg, private_jwk_sealed) VALUES ($1, $2, $3)', [k.kid, 'ES256', secrets.seal(JSON.stringify(k.jwk))]);
    await client.query('COMMIT');
    return k.kid;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
