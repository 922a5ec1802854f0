// Asks the platform to refresh an OAuth connection's credential mid-run (an upstream answered 401):
// POST <connectionsUrl>/<connectionId>/refresh?integration=<packageId>, signed like the run events
// over lib/run-connection-signing.ts's payload (no body).
// The answer holds the new credential fields; nothing of it is logged here.
import { requestText } from '../lib/outbound-http.ts';
import { runConnectionSigningPayload } from '../lib/run-connection-signing.ts';
import { signedRunEventHeaders } from '../lib/run-events.ts';
import type { IntegrationAssignment } from './assignment.ts';
import type { CredentialRefresh } from './integration-tools.ts';

const REFRESH_TIMEOUT_MS = 20_000;

function stringFields(v: unknown): Record<string, string> | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const entries = Object.entries(v);
  return entries.every(([, value]) => typeof value === 'string') ? Object.fromEntries(entries) as Record<string, string> : null;
}

export function platformCredentialRefresh(connectionsUrl: string, secret: string): (integration: IntegrationAssignment) => Promise<CredentialRefresh> {
  return async (integration) => {
    // an integration without a connection (no auths) has no credential the platform could refresh
    if (integration.connectionId === null) return { ok: false, code: 'no_connection' };
    const target = new URL(`${connectionsUrl.replace(/\/+$/, '')}/${encodeURIComponent(integration.connectionId)}/refresh`);
    target.searchParams.set('integration', integration.packageId);
    try {
      const res = await requestText(target, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-length': '0', ...signedRunEventHeaders(secret, runConnectionSigningPayload('refresh', integration.connectionId, integration.packageId)) },
        body: '',
        timeoutMs: REFRESH_TIMEOUT_MS,
      });
      let answer: { code?: unknown; credentials?: unknown } = {};
      try {
        answer = JSON.parse(res.text) as typeof answer;
      } catch { /* judged by status */ }
      if (res.status === 200) {
        const credentials = stringFields(answer.credentials);
        return credentials ? { ok: true, credentials } : { ok: false, code: 'invalid_answer' };
      }
      return { ok: false, code: typeof answer.code === 'string' && /^[A-Za-z_]{1,64}$/.test(answer.code) ? answer.code : `status_${res.status}` };
    } catch {
      return { ok: false, code: 'platform_unreachable' };
    }
  };
}
