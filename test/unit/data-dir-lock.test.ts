// One platform per data directory: the lock file, its stale-owner detection, and the check that a
// recorded PostgreSQL pid is still that server before it is signalled.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { lockDataDir, ownerAlive, processStartTime, StartRefused } from '../../bin/instance-lock.ts';
import { isPostgresOf } from '../../db/embedded-postgres.ts';

const dirs: string[] = [];
const children: ChildProcess[] = [];
const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'lock-'));
  dirs.push(d);
  return d;
};
/** A live process whose command line carries the given arguments. */
function sleeper(args: string[]): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', ...args], { stdio: 'ignore' });
  children.push(child);
  return child;
}
/** A pid that belonged to a process which has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((r) => child.once('exit', r));
  return child.pid!;
}

after(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('the data directory lock', () => {
  test('is created with the owner, refuses a second taker naming the first, and is released', () => {
    const dir = tempDir();
    const lock = lockDataDir(dir);
    lock.announce('http://127.0.0.1:3999');
    const owner = JSON.parse(fs.readFileSync(path.join(dir, 'platform.lock'), 'utf8'));
    assert.equal(owner.pid, process.pid);
    assert.equal(owner.api, 'http://127.0.0.1:3999');
    assert.throws(() => lockDataDir(dir), (err: Error) => {
      assert.ok(err instanceof StartRefused);
      assert.match(err.message, new RegExp(`pid ${process.pid}, API http://127\\.0\\.0\\.1:3999`));
      assert.ok(err.message.includes(dir));
      assert.doesNotMatch(err.message, /\n/);
      return true;
    });
    lock.release();
    assert.equal(fs.existsSync(path.join(dir, 'platform.lock')), false);
    lockDataDir(dir).release();
  });

  test('a lock whose owner has exited is stale and taken over', async () => {
    const dir = tempDir();
    const pid = await deadPid();
    fs.writeFileSync(path.join(dir, 'platform.lock'), JSON.stringify({ pid, started: null, token: 'old', at: 'then' }));
    const lock = lockDataDir(dir);
    assert.equal(JSON.parse(fs.readFileSync(lock.file, 'utf8')).pid, process.pid);
    lock.release();
  });

  test('a recorded pid now used by another process (another start time) is stale', () => {
    const dir = tempDir();
    const other = sleeper([]);
    const started = processStartTime(other.pid!);
    assert.ok(started, 'this test needs /proc');
    assert.equal(ownerAlive({ pid: other.pid!, started }), true);
    const reused = { pid: other.pid!, started: String(Number(started) - 1), token: 'old', at: 'then' };
    assert.equal(ownerAlive(reused), false);
    fs.writeFileSync(path.join(dir, 'platform.lock'), JSON.stringify(reused));
    lockDataDir(dir).release();
  });

  test('a lock left unreadable is stale; a release leaves another owner\'s lock alone', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'platform.lock'), '{"pid":');
    const lock = lockDataDir(dir);
    const theirs = JSON.stringify({ pid: process.pid, started: processStartTime(process.pid), token: 'theirs', at: 'now' });
    fs.writeFileSync(lock.file, theirs);
    lock.release();
    assert.equal(fs.readFileSync(lock.file, 'utf8'), theirs);
  });
});

describe('a recorded PostgreSQL pid', () => {
  test('is signalled only while it is a postgres of this cluster', async () => {
    const cluster = path.join(tempDir(), 'cluster');
    const server = sleeper(['/opt/pg/bin/postgres', '-D', cluster, '-p', '5999']);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(isPostgresOf(server.pid!, cluster), true);
    assert.equal(isPostgresOf(server.pid!, `${cluster}-other`), false, 'another cluster');
    const unrelated = sleeper(['--name', cluster]);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(isPostgresOf(unrelated.pid!, cluster), false, 'a reused pid running another program');
    assert.equal(isPostgresOf(await deadPid(), cluster), false, 'an exited process');
    assert.equal(isPostgresOf(process.pid, cluster), false, 'ourselves');
  });
});
