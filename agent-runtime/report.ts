// Tells the sidecar how the run ended; the sidecar signs it and forwards it to the platform.
import type { AgentOutcome } from './run-agent.ts';

const ATTEMPTS = 5;

export async function reportOutcome(sidecarUrl: string, outcome: AgentOutcome, sidecarFetch: typeof fetch = fetch): Promise<boolean> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    try {
      const res = await sidecarFetch(`${sidecarUrl}/runtime/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(outcome),
        signal: AbortSignal.timeout(10_000),
      });
      await res.arrayBuffer();
      // 409: an end was reported already, nothing more to do
      if (res.ok || res.status === 409) return true;
      if (res.status < 500) return false;
    } catch {
      // the sidecar is restarting or busy: try again
    }
    await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
  }
  return false;
}
