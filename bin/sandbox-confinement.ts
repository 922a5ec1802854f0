// Whether the process sandbox confines its agents, held against what the operator requires
// (SANDBOX_CONFINEMENT) and against what the previous start on this data directory had: agents
// that run unconfined can read the host's files and reach its network, which must never happen
// quietly. The last start's confinement is kept in DATA_DIR/sandbox-confinement.json.
import fs from 'node:fs';
import path from 'node:path';
import type { Degradation } from '../api/lifecycle.ts';
import type { SandboxIsolation } from '../activities/sandbox/process-adapter.ts';
import type { Logger } from '../lib/log.ts';
import { StartRefused } from './instance-lock.ts';

const RECORD = 'sandbox-confinement.json';

interface Recorded {
  confinement: SandboxIsolation['confinement'];
  at: string;
}

function previous(dataDir: string): Recorded | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(dataDir, RECORD), 'utf8')) as Recorded;
  } catch {
    return null;
  }
}

/**
 * Refuses the start when confinement is required and missing (StartRefused); otherwise records
 * this start's confinement and returns the warning to show while agents run unconfined.
 */
export function checkConfinement(isolation: SandboxIsolation, opts: { dataDir: string; required: boolean; log: Logger }): Degradation[] {
  const why = isolation.confinementNote ?? 'unknown';
  if (isolation.confinement === 'none' && opts.required) {
    throw new StartRefused(`SANDBOX_CONFINEMENT=required, but the process sandbox cannot confine agents here (${why}). Install bubblewrap on a host that allows user namespaces, or use RUN_ADAPTER=docker.`);
  }
  const before = previous(opts.dataDir);
  const now: Recorded = { confinement: isolation.confinement, at: new Date().toISOString() };
  fs.writeFileSync(path.join(opts.dataDir, RECORD), JSON.stringify(now));
  if (isolation.confinement !== 'none') return [];
  const lost = before?.confinement === 'bubblewrap' ? `Confinement lost: the previous start (${before.at}) confined agents with bubblewrap. ` : '';
  const detail = `${lost}Agents run unconfined (${why}): they can read this host's files and reach its network. Run only trusted agents, or set SANDBOX_CONFINEMENT=required to refuse to start without confinement.`;
  opts.log.warn(`process sandbox: ${detail}`);
  return [{ code: 'sandbox_unconfined', detail }];
}
