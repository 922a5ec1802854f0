// The local servers' egress proxy in a process of its own, as the sidecar runs it, for tests that
// need it to trust a fake vendor's certificate the way an operator makes a sidecar trust one
// (SANDBOX_EGRESS_CA_FILE's certificates, handed over as the egress options' extraCa). Its configuration is one JSON line on stdin; it
// answers {"port", "ca"} (the run authority's certificate), then one {"note"} line per run log
// line, and ends when stdin closes (its parent is gone).
import { createInterface } from 'node:readline';
import type { IntegrationAssignment } from '../../lib/afps/integration-assignment.ts';
import { platformCredentialRefresh } from '../../sidecar/connection-refresh.ts';
import { deliveredCredential } from '../../sidecar/integration-tools.ts';
import { localEgressProxy } from '../../sidecar/local-egress-proxy.ts';
import { createRunCa } from '../../sidecar/run-ca.ts';

export interface ChildConfig {
  clients: Array<{ packageId: string; secret: string; authorizedUris: string[]; credential?: IntegrationAssignment }>;
  /** host name → address, as the test's resolver answers */
  hosts: Record<string, string>;
  allowInternalHosts: string[];
  platformEndpoints: Array<{ host: string; port: number }>;
  /** where the platform refreshes connections, and the run's event secret */
  connectionsUrl: string;
  eventSecret: string;
  /** certificate authorities trusted beside the system's (what SANDBOX_EGRESS_CA_FILE hands a sidecar) */
  extraCa?: string;
}

const lines = createInterface({ input: process.stdin });
let started = false;
lines.on('line', (line) => void (async () => {
  if (started) return;
  started = true;
  const config = JSON.parse(line) as ChildConfig;
  const note = (message: string) => process.stdout.write(`${JSON.stringify({ note: message })}\n`);
  const refreshCredential = platformCredentialRefresh(config.connectionsUrl, config.eventSecret);
  const ca = await createRunCa();
  const proxy = localEgressProxy({
    clients: config.clients.map(({ credential, ...c }) => ({ ...c, ...(credential ? { credential: deliveredCredential(credential, { refreshCredential, note }) } : {}) })),
    egress: {
      allowInternalHosts: config.allowInternalHosts,
      platformEndpoints: config.platformEndpoints,
      resolve: async (host) => (config.hosts[host] ? [config.hosts[host]] : []),
      ...(config.extraCa ? { extraCa: config.extraCa } : {}),
    },
    ca,
    note,
  });
  const port = await proxy.listen('127.0.0.1', 0);
  process.stdout.write(`${JSON.stringify({ port, ca: ca.certPem })}\n`);
})());
lines.on('close', () => process.exit(0));
