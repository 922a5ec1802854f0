// Standard Webhooks signing: the secret is whsec_ + base64 of 32 random bytes; a message is signed
// with HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>" and sent as "v1,<base64>". After a
// rotation the previous secret signs beside the new one (space-separated) until it expires.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

export function signWebhookMessage(secret: string, id: string, timestampSec: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSec}.${body}`).digest('base64')}`;
}

/** The three Standard Webhooks headers for one attempt, signed by every secret still valid. */
export function webhookHeaders(secrets: string[], id: string, timestampSec: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSec),
    'webhook-signature': secrets.map((s) => signWebhookMessage(s, id, timestampSec, body)).join(' '),
  };
}
