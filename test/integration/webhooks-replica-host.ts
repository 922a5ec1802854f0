// A stand-in API replica for the webhook crash test: its webhook dispatcher alone, over the test's
// database and engine, in a process of its own that the test kills mid-attempt.
//   DATABASE_URL=... INGRESS_URL=... SECRET_KEY=<hex> ALLOW_INTERNAL=127.0.0.1:<port> TIMEOUT_MS=... node --import tsx webhooks-replica-host.ts
import pg from 'pg';
import { startDispatcher } from '../../api/modules/webhooks/dispatcher.ts';
import { createSecretBox } from '../../lib/crypto.ts';
import { createLogger } from '../../lib/log.ts';

const env = process.env as Record<string, string>;
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 4 });
startDispatcher({
  delivery: {
    pool,
    secrets: createSecretBox(Buffer.from(env.SECRET_KEY!, 'hex')),
    egress: { allowInternalHosts: [env.ALLOW_INTERNAL!] },
    retrySchedule: [0.25],
    timeoutMs: Number(env.TIMEOUT_MS),
  },
  databaseUrl: env.DATABASE_URL!,
  ingressUrl: env.INGRESS_URL!,
  log: createLogger('error'),
});
process.stdout.write('ready\n');
setInterval(() => undefined, 60_000);
