// An operation invoked through the MCP endpoint is a loopback request into this same process with
// the caller's own credential. An OIDC access token there is bound to the MCP endpoint's resource,
// not the API's: the endpoint vouches for the inner request with an HMAC over the organization and
// the Authorization header, keyed by a secret that never leaves this process.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const DISPATCH_PROOF_HEADER = 'x-mcp-dispatch-proof';
const KEY = randomBytes(32);

export function dispatchProof(org: string, authorization: string): string {
  return createHmac('sha256', KEY).update(`${org.toLowerCase()}\n${authorization}`).digest('base64url');
}

/** True when the request carries this process's proof for that organization and credential. */
export function hasDispatchProof(headers: Record<string, string | string[] | undefined>, org: string): boolean {
  const proof = headers[DISPATCH_PROOF_HEADER];
  const authorization = headers.authorization;
  if (typeof proof !== 'string' || typeof authorization !== 'string') return false;
  const want = Buffer.from(dispatchProof(org, authorization));
  const got = Buffer.from(proof);
  return got.length === want.length && timingSafeEqual(got, want);
}
