// One platform per data directory: DATA_DIR/platform.lock names its owner (pid, the process's
// start time, a token) and is created with O_EXCL before anything in the directory is adopted or
// started. A lock whose owner is gone, or whose pid now belongs to another process, is stale.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/** A start that cannot go on; its message is one line for a person, shown without a stack. */
export class StartRefused extends Error {}

export interface LockOwner {
  pid: number;
  /** the owner's start time as the kernel counts it (/proc/<pid>/stat field 22), when known */
  started: string | null;
  token: string;
  at: string;
  api?: string;
}

export interface InstanceLock {
  file: string;
  /** records the API address, so a refused second start can name it */
  announce(api: string): void;
  release(): void;
}

/** The kernel's start time of a process, or null where /proc is not available. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether the recorded owner still runs: same pid, not a zombie, and the same start time. */
export function ownerAlive(owner: Pick<LockOwner, 'pid' | 'started'>): boolean {
  if (!Number.isInteger(owner.pid) || owner.pid <= 0) return false;
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    // EPERM: it exists but belongs to another user
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${owner.pid}/stat`, 'utf8');
  } catch {
    // No /proc (not Linux): the signal check is all there is.
    return true;
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z') return false;
  return owner.started === null || fields[19] === owner.started;
}

function readOwner(file: string): LockOwner | null | 'missing' {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return 'missing';
  }
  try {
    const o = JSON.parse(text) as LockOwner;
    return typeof o.pid === 'number' && typeof o.token === 'string' ? o : null;
  } catch {
    return null;
  }
}

function describe(owner: LockOwner, dataDir: string): string {
  return `Another platform is running on the data directory ${dataDir}: pid ${owner.pid}, API ${owner.api ?? '(starting)'}, since ${owner.at}. Stop it first, or set DATA_DIR to another directory.`;
}

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Takes the data directory's lock, or throws StartRefused naming the running instance. */
export function lockDataDir(dataDir: string): InstanceLock {
  const file = path.join(dataDir, 'platform.lock');
  const me: LockOwner = { pid: process.pid, started: processStartTime(process.pid), token: randomBytes(12).toString('hex'), at: new Date().toISOString() };
  const write = (owner: LockOwner, flag: string) => {
    const fd = fs.openSync(file, flag, 0o644);
    try {
      fs.writeSync(fd, JSON.stringify(owner));
    } finally {
      fs.closeSync(fd);
    }
  };
  for (let attempt = 0; ; attempt++) {
    try {
      write(me, 'wx');
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let owner = readOwner(file);
    // Created but not yet written by a start racing this one: give it a moment.
    if (owner === null) {
      sleepSync(200);
      owner = readOwner(file);
    }
    if (owner !== null && owner !== 'missing' && ownerAlive(owner)) throw new StartRefused(describe(owner, dataDir));
    if (attempt >= 3) throw new StartRefused(`Cannot take the lock ${file}: it keeps changing; is another platform starting on this data directory?`);
    if (owner !== 'missing') removeStale(file, owner);
  }
  const lock: InstanceLock = {
    file,
    announce(api) {
      const current = readOwner(file);
      if (current === null || current === 'missing' || current.token !== me.token) return;
      const tmp = `${file}.${me.token}`;
      fs.writeFileSync(tmp, JSON.stringify({ ...me, api }));
      fs.renameSync(tmp, file);
    },
    release() {
      process.removeListener('exit', lock.release);
      const current = readOwner(file);
      if (current !== null && current !== 'missing' && current.token === me.token) fs.rmSync(file, { force: true });
    },
  };
  process.once('exit', lock.release);
  return lock;
}

/**
 * Removes a stale lock under a short-lived takeover file, so two starts that both found it stale
 * cannot remove each other's fresh lock.
 */
function removeStale(file: string, seen: LockOwner | null): void {
  const takeover = `${file}.takeover`;
  try {
    fs.closeSync(fs.openSync(takeover, 'wx'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // A takeover left by a start that died in these few lines is old: clear it for the next attempt.
    try {
      if (Date.now() - fs.statSync(takeover).mtimeMs > 10_000) fs.rmSync(takeover, { force: true });
    } catch {
      // gone meanwhile
    }
    sleepSync(100);
    return;
  }
  try {
    const now = readOwner(file);
    const same = now === null ? seen === null : now !== 'missing' && seen !== null && now.token === seen.token;
    if (same) fs.rmSync(file, { force: true });
  } finally {
    fs.rmSync(takeover, { force: true });
  }
}
