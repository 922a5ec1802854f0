// identity_claims: the auth's JSONPath expressions (lib/json-path.ts) naming the connection's
// account_id and label in the upstream's answer (the login's JSON body, the OAuth token answer).
// The answer is untrusted: a claim must be a short string or number, and a value that is or holds
// one of the connection's secrets is never used (a label is shown to other members).
import type { IntegrationAuth } from '../../../lib/afps/manifest-types.ts';
import { selectJsonPath } from '../../../lib/json-path.ts';

const MAX_CLAIM_LENGTH = 200;

export interface ClaimedIdentity {
  accountId: string | null;
  label: string | null;
}

function claimText(value: unknown, secrets: string[]): string | null {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
  else return null;
  // eslint-disable-next-line no-control-regex
  text = text.replace(/[\u0000-\u001f\u007f]/g, ' ').trim().slice(0, MAX_CLAIM_LENGTH);
  if (text === '') return null;
  if (secrets.some((s) => s.length >= 4 && (text.includes(s) || (s.includes(text) && text.length >= 8)))) return null;
  return text;
}

/** Parses a login's body as JSON; undefined when it is not JSON. */
export function jsonAnswer(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** The account the claims name in `answer`; each null when not declared or naming nothing usable. */
export function claimedIdentity(auth: Pick<IntegrationAuth, 'identity_claims'>, answer: unknown, secrets: string[]): ClaimedIdentity {
  const claims = auth.identity_claims;
  if (!claims || answer === undefined) return { accountId: null, label: null };
  const pick = (expression: string | undefined) => (expression === undefined ? null : claimText(selectJsonPath(expression, answer), secrets));
  return { accountId: pick(claims.account_id), label: pick(claims.label) };
}
