// The runs bench counts the CPU of processes inside bubblewrap's PID namespace: their time never
// reaches the parent's reaped-children counter (the bench's old reading), the /proc tree poller
// sees it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { findBubblewrap } from '../../activities/sandbox/confinement.ts';
import { cpuOf } from '../../bench/harness/process-stats.ts';
import { TreeCpuPoller } from '../../bench/harness/tree-cpu.ts';

// busy until the process has used 300 ms of CPU (a wall-clock loop uses less on a loaded machine)
const BUSY_300_MS = 'for (let u = process.cpuUsage(); u.user + u.system < 300_000; u = process.cpuUsage());';

function runToExit(command: string, args: string[]): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(code) : reject(new Error(`${command} exited ${code}: ${stderr}`))));
  });
}

test('a 300 ms busy loop under bwrap --unshare-pid is counted by the tree poller, by part', async (t) => {
  const bwrap = findBubblewrap();
  assert.ok(bwrap, 'bwrap is required (the process sandbox confines with it here and in CI)');
  const poller = new TreeCpuPoller(process.pid, (_pid, command) => (command.includes('bwrap') ? 'confined' : command.includes('cpuUsage') ? 'plain' : 'test runner')).start();
  const reapedBefore = cpuOf(process.pid)!.reaped_children;
  try {
    await runToExit(bwrap, ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-pid', '--die-with-parent', process.execPath, '-e', BUSY_300_MS]);
  } finally {
    poller.stop();
  }
  const reaped = cpuOf(process.pid)!.reaped_children - reapedBefore;
  const totals = poller.totals();
  t.diagnostic(`poller: ${JSON.stringify(totals)} over ${poller.polls} polls; reaped-children counter: ${reaped.toFixed(3)} CPU-s`);
  assert.ok((totals.confined ?? 0) >= 0.2, `the confined busy loop counted at ${totals.confined} CPU-s`);
  assert.ok(poller.processes().confined >= 3, 'bwrap, its init in the namespace and node are each seen');
  assert.equal(totals.plain, undefined, 'nothing unconfined counted as the loop');
});

test('a process that ends is kept at its last reading and a later one is added; one already running counts from the first poll', async (t) => {
  const before = spawn(process.execPath, ['-e', `${BUSY_300_MS} setTimeout(() => {}, 30_000);`], { stdio: 'ignore' });
  t.after(() => before.kill('SIGKILL'));
  // its loop done before the poller starts: the poller must not count it
  for (let cpu = 0; cpu < 0.25; cpu = cpuOf(before.pid!)?.own ?? Infinity) await new Promise((r) => setTimeout(r, 50));
  const poller = new TreeCpuPoller(process.pid, (_pid, command) => (command.includes('cpuUsage') ? 'node' : 'test runner')).start();
  try {
    await runToExit(process.execPath, ['-e', BUSY_300_MS]);
    const first = poller.totals().node;
    assert.ok(first >= 0.2, `first loop: ${first}`);
    await runToExit(process.execPath, ['-e', BUSY_300_MS]);
  } finally {
    poller.stop();
  }
  before.kill('SIGKILL');
  assert.ok(poller.totals().node >= 0.45 && poller.totals().node < 0.7, `two loops, not the one before: ${poller.totals().node}`);
  assert.equal(poller.processes(true).node, 2);
});
