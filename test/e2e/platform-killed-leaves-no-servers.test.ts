// The embedded PostgreSQL and Restate do not outlive the platform that started them, however it
// ends: killed with SIGKILL (no handler of ours runs), they are gone within seconds, even when
// their data folder was deleted under them. And servers of a data folder that a killed platform
// left running (a host where they could not be bound to it) are ended by the next start, which
// runs its own, bound to itself.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { offlineCommand } from '../../restate/launcher.ts';
import { embeddedSetup, until, within, type EmbeddedSetup, type Started } from '../support/embedded-platform.ts';

const setups: EmbeddedSetup[] = [];
after(() => {
  for (const s of setups) s.cleanup();
});

async function started(): Promise<{ setup: EmbeddedSetup; platform: Started }> {
  const setup = await embeddedSetup();
  setups.push(setup);
  const platform = setup.launch();
  await setup.waitReady(platform);
  return { setup, platform };
}

function parentOf(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/** Ended: no process, or a zombie its parent (here init, which reaps in its own time) has not collected yet. */
function ended(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

const servers = (setup: EmbeddedSetup) => {
  const all = setup.processes();
  return { postgres: all.filter((p) => /\/postgres /.test(p.cmd)), restate: all.filter((p) => /restate-server /.test(p.cmd)) };
};

/** SIGKILL to the platform alone; resolves with how long its servers took to go. */
async function killAndTimeServers(setup: EmbeddedSetup, platform: Started): Promise<number> {
  platform.child.kill('SIGKILL');
  assert.notEqual(await within(platform.exited, 10_000), 'timeout');
  const began = Date.now();
  await until(() => setup.processes().length === 0, 15_000, `the servers of ${setup.dataDir} end: ${JSON.stringify(setup.processes())}`);
  return Date.now() - began;
}

test('SIGKILL to a started platform: its PostgreSQL and Restate are gone within seconds', async () => {
  const { setup, platform } = await started();
  const running = servers(setup);
  assert.equal(running.postgres.length > 0 && running.restate.length > 0, true, JSON.stringify(running));
  for (const p of [running.postgres[0]!, running.restate[0]!]) assert.equal(parentOf(p.pid), platform.child.pid, `${p.cmd} is the platform's child`);
  const ms = await killAndTimeServers(setup, platform);
  assert.ok(ms < 10_000, `gone in ${ms} ms`);
});

test('SIGKILL after the data folder was deleted: nothing is left running that nothing could adopt', async () => {
  const { setup, platform } = await started();
  assert.ok(servers(setup).postgres.length > 0);
  // the engine writes on as the folder goes: a removal meeting its new files tries again
  fs.rmSync(setup.dataDir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
  const ms = await killAndTimeServers(setup, platform);
  assert.ok(ms < 10_000, `gone in ${ms} ms`);
});

interface Captured {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  uid: number;
  gid: number;
}

function capture(pid: number): Captured {
  const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a, i, all) => a !== '' || i < all.length - 1);
  const env = Object.fromEntries(fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const id = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)![1]);
  return { argv, env, cwd: fs.readlinkSync(`/proc/${pid}/cwd`), uid: id('Uid'), gid: id('Gid') };
}

/** Starts the server again as a killed platform of an unbinding host would have left it: a child of init. */
function leaveRunning(server: Captured): void {
  const [binary, ...args] = server.argv;
  // Restate as the launcher runs it: its vendor's release lookup must not leave this machine.
  const [command, commandArgs] = binary!.endsWith('restate-server') ? offlineCommand(server.cwd, binary!, args) : [binary!, args];
  const sh = spawn('/bin/sh', ['-c', '"$@" </dev/null >/dev/null 2>&1 &', 'sh', command, ...commandArgs], {
    env: server.env, cwd: server.cwd, uid: server.uid, gid: server.gid, stdio: 'ignore', detached: true,
  });
  sh.unref();
}

test('a start that finds servers a killed platform left running ends them and runs its own, which end with it', async () => {
  const { setup, platform } = await started();
  const pgServer = capture(servers(setup).postgres.find((p) => parentOf(p.pid) === platform.child.pid)!.pid);
  const restateServer = capture(servers(setup).restate[0]!.pid);
  const ports = JSON.parse(fs.readFileSync(path.join(setup.dataDir, 'ports.json'), 'utf8')) as { postgres: number; restateAdmin: number };
  platform.child.kill('SIGTERM');
  assert.equal(await within(platform.exited, 30_000), 0);
  assert.deepEqual(setup.processes(), []);

  leaveRunning(pgServer);
  leaveRunning(restateServer);
  const password = fs.readFileSync(path.join(setup.dataDir, 'postgres', 'password'), 'utf8').trim();
  await until(async () => {
    const c = new pg.Client({ host: '127.0.0.1', port: ports.postgres, user: 'platform', password, database: 'postgres' });
    c.on('error', () => {});
    return c.connect().then(() => c.end().then(() => true), () => false);
  }, 30_000, 'the left PostgreSQL answers');
  await until(() => fetch(`http://127.0.0.1:${ports.restateAdmin}/health`).then((r) => r.ok, () => false), 30_000, 'the left Restate answers');
  const left = setup.processes().filter((p) => /\/postgres |restate-server /.test(p.cmd) && parentOf(p.pid) === 1);
  assert.equal(left.length, 2, `two servers left running, children of init: ${JSON.stringify(setup.processes())}`);
  fs.writeFileSync(path.join(setup.dataDir, 'restate.pid'), String(left.find((p) => /restate-server /.test(p.cmd))!.pid));

  const next = setup.launch();
  await setup.waitReady(next);
  for (const p of left) assert.ok(ended(p.pid), `the left server ${p.pid} (${p.cmd.slice(0, 60)}) was ended`);
  assert.match(next.output(), /ending the embedded PostgreSQL \(pid \d+\) of a previous platform/);
  assert.match(next.output(), /ending the embedded Restate server of a previous platform/);
  const own = servers(setup);
  for (const p of [own.postgres.find((s) => parentOf(s.pid) === next.child.pid), own.restate[0]]) {
    assert.ok(p && parentOf(p.pid) === next.child.pid, `the new start's own servers are its children: ${JSON.stringify(own)}`);
  }
  const ms = await killAndTimeServers(setup, next);
  assert.ok(ms < 10_000, `gone in ${ms} ms`);
});
