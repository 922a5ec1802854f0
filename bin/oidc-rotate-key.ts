// Operator command: rotate the OpenID provider's signing key.
//   node --import tsx bin/oidc-rotate-key.ts
// with the platform's DATABASE_URL and ENCRYPTION_KEY (or DATA_DIR holding encryption.key). The
// new key signs from the next minute on in every API process; the retired one stays published in
// the JWKS (and accepted) until the tokens it signed have expired.
import fs from 'node:fs';
import path from 'node:path';
import { connectDatabase } from '../db/client.ts';
import { loadConfig } from '../lib/config.ts';
import { createSecretBox } from '../lib/crypto.ts';
import { rotateOidcSigningKey } from '../api/modules/oidc/index.ts';

const config = loadConfig(process.env);
if (!config.DATABASE_URL) throw new Error('Set DATABASE_URL to the platform\'s database.');
const keyFile = path.join(path.resolve(config.DATA_DIR), 'encryption.key');
// never a fresh key: it could not open the sealed keys
if (!config.ENCRYPTION_KEY && !fs.existsSync(keyFile)) throw new Error('Set ENCRYPTION_KEY or DATA_DIR: the instance key is needed.');
const instanceKey = Buffer.from(config.ENCRYPTION_KEY ?? fs.readFileSync(keyFile, 'utf8').trim(), 'base64');
const database = connectDatabase(config.DATABASE_URL);
try {
  const kid = await rotateOidcSigningKey({ database, secrets: createSecretBox(instanceKey) });
  process.stdout.write(`${JSON.stringify({ rotated: true, kid })}\n`);
} finally {
  await database.close();
}
