// What the platform keeps in its data directory between starts: the ports its embedded parts
// chose on first start (Restate pins in-flight invocations to the registered endpoint address),
// and the generated encryption key.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from '../lib/free-port.ts';
export { freePort };

const PORT_NAMES = ['postgres', 'restateIngress', 'restateAdmin', 'restateNode', 'worker'] as const;
export type PortName = (typeof PORT_NAMES)[number];

export type PortPlan = Record<PortName, number> & {
  /**
   * The ports this start chose (none was kept): nothing has been told them yet, so one that another
   * process took between the check and the bind can still be chosen again (choosePortAgain).
   */
  chosenNow: PortName[];
};

function savePlan(dataDir: string, plan: PortPlan): void {
  const kept = Object.fromEntries(PORT_NAMES.map((name) => [name, plan[name]]));
  fs.writeFileSync(path.join(dataDir, 'ports.json'), JSON.stringify(kept, null, 2));
}

/** Reads the kept ports, choosing and saving any that are missing. */
export async function portPlan(dataDir: string): Promise<PortPlan> {
  let saved: Partial<Record<PortName, number>> = {};
  try {
    saved = JSON.parse(fs.readFileSync(path.join(dataDir, 'ports.json'), 'utf8'));
  } catch {
    saved = {};
  }
  const plan = { chosenNow: [] } as unknown as PortPlan;
  for (const name of PORT_NAMES) {
    const kept = saved[name];
    if (kept !== undefined) plan[name] = kept;
    else {
      plan[name] = await freePort();
      plan.chosenNow.push(name);
    }
  }
  if (plan.chosenNow.length > 0) savePlan(dataDir, plan);
  return plan;
}

/** Replaces a port this start chose and found taken when it came to bind it; the new one is kept. */
export async function choosePortAgain(dataDir: string, plan: PortPlan, name: PortName): Promise<number> {
  if (!plan.chosenNow.includes(name)) throw new Error(`the ${name} port was kept from an earlier start and cannot change`);
  plan[name] = await freePort();
  savePlan(dataDir, plan);
  return plan[name];
}

/** The configured key, or the one generated on first start and kept with mode 0600. */
export function encryptionKey(dataDir: string, configured: string | undefined): Buffer {
  if (configured) return Buffer.from(configured, 'base64');
  const file = path.join(dataDir, 'encryption.key');
  if (fs.existsSync(file)) return Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
  const key = randomBytes(32);
  fs.writeFileSync(file, key.toString('base64'), { mode: 0o600 });
  return key;
}

/** The bootstrap token: configured, or generated once and kept until redeemed. */
export function bootstrapToken(dataDir: string, configured: string | undefined): string {
  if (configured) return configured;
  const file = path.join(dataDir, 'bootstrap-token');
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  const token = `bst_${randomBytes(24).toString('base64url')}`;
  fs.writeFileSync(file, token, { mode: 0o600 });
  return token;
}
