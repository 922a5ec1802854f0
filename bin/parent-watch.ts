// npm does not pass SIGTERM on to the script it runs: the platform would be left running without
// the process a manager signalled. Started by npm, the platform watches the launching chain (npm
// and the shell it runs scripts with) and stops when one of them goes away.
import fs from 'node:fs';
import { ownerAlive, processStartTime } from './instance-lock.ts';

interface Ancestor {
  pid: number;
  started: string | null;
}

function parentOf(pid: number): { ppid: number; cmd: string } | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return { ppid, cmd: fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ') };
  } catch {
    return null;
  }
}

/** The processes from our parent up to the npm that started us (our parent alone if none is npm). */
export function launchingChain(): Ancestor[] {
  const chain: Ancestor[] = [];
  let pid = process.ppid;
  for (let depth = 0; depth < 4 && pid > 1; depth++) {
    const info = parentOf(pid);
    if (!info) break;
    chain.push({ pid, started: processStartTime(pid) });
    if (/(^|[\s/])npm(-cli\.js)?(\s|$)/.test(info.cmd)) return chain;
    pid = info.ppid;
  }
  return chain.slice(0, 1);
}

/** Calls onGone once when the launching chain breaks; only when an npm script started us. */
export function watchParent(onGone: () => void, env: NodeJS.ProcessEnv = process.env, intervalMs = 500): () => void {
  // Started another way (a process manager, a container, nohup), the platform's lifetime is its own.
  if (!env.npm_lifecycle_event || process.ppid <= 1) return () => {};
  const chain = launchingChain();
  const firstParent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === firstParent && chain.every(ownerAlive)) return;
    clearInterval(timer);
    onGone();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
