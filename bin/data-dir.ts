// What the platform keeps in its data directory between starts: the ports its embedded parts
// chose on first start (Restate pins in-flight invocations to the registered endpoint address),
// and the generated encryption key.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from '../lib/free-port.ts';
export { freePort };

export interface PortPlan {
  postgres: number;
  restateIngress: number;
  restateAdmin: number;
  restateNode: number;
  worker: number;
}


/** Reads the kept ports, choosing and saving any that are missing. */
export async function portPlan(dataDir: string): Promise<PortPlan> {
  const file = path.join(dataDir, 'ports.json');
  let saved: Partial<PortPlan> = {};
  try {
    saved = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    saved = {};
  }
  const plan: PortPlan = {
    postgres: saved.postgres ?? (await freePort()),
    restateIngress: saved.restateIngress ?? (await freePort()),
    restateAdmin: saved.restateAdmin ?? (await freePort()),
    restateNode: saved.restateNode ?? (await freePort()),
    worker: saved.worker ?? (await freePort()),
  };
  if (JSON.stringify(plan) !== JSON.stringify(saved)) fs.writeFileSync(file, JSON.stringify(plan, null, 2));
  return plan;
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
