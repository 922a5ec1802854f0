// Signals to a run's workflow (started, terminal, cancel, approvals) carry a MAC made with a key derived
// from the instance key, so only the platform can resolve them: a process that merely reaches the
// workflow engine's ingress (an unconfined agent on the same host) cannot end its own run.
import { createHmac, timingSafeEqual } from 'node:crypto';

export type SignalKind = 'started' | 'terminal' | 'cancel' | 'approval_requested' | 'approval_decided';

export function deriveSignalKey(instanceKey: Buffer): Buffer {
  return createHmac('sha256', instanceKey).update('run workflow signals v1').digest();
}

export function signalMac(key: Buffer, runId: string, kind: SignalKind, body: unknown): string {
  return createHmac('sha256', key).update(`${kind}\n${runId}\n${JSON.stringify(body ?? null)}`).digest('base64url');
}

export function signalMacValid(key: Buffer, runId: string, kind: SignalKind, body: unknown, mac: unknown): boolean {
  if (typeof mac !== 'string') return false;
  const expected = Buffer.from(signalMac(key, runId, kind, body));
  const given = Buffer.from(mac);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
