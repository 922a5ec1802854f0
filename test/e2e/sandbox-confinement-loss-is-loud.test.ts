// Agents that lose their confinement must not do so quietly. A platform whose previous start
// confined agents with bubblewrap, started again where bubblewrap refuses (a host that forbids
// user namespaces), warns at start and on readiness's body that agents run unconfined and that
// this start lost what the previous had; with SANDBOX_CONFINEMENT=required it refuses to start.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';

let platform: PlatformProcess;
let refusing: string;

const readiness = async () => {
  const res = await fetch(`${platform.url}/health/ready`);
  return { status: res.status, body: (await res.json()) as { status: string; warnings?: Array<{ code: string; detail: string }> } };
};

before(async () => {
  platform = await startPlatformProcess({ env: { SANDBOX_WARM_POOL: '0', LOG_LEVEL: 'warn' } });
  // bubblewrap as a host that forbids unprivileged user namespaces answers it
  refusing = fs.mkdtempSync(path.join(platform.dataDir, 'refusing-bwrap-'));
  fs.writeFileSync(path.join(refusing, 'bwrap'), '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n', { mode: 0o755 });
});
after(() => platform?.stop());

test('a confined start says nothing on readiness', async () => {
  assert.deepEqual(await readiness(), { status: 200, body: { status: 'ok' } });
  assert.doesNotMatch(platform.output(), /unconfined/);
});

test('started again where bubblewrap refuses: a warning at start and on readiness, naming the loss', async () => {
  await platform.kill('SIGTERM');
  platform.env.PATH = `${refusing}:${platform.env.PATH}`;
  const mark = platform.output().length;
  await platform.restart();
  const said = platform.output().slice(mark);
  assert.match(said, /Confinement lost: the previous start \(.+\) confined agents with bubblewrap\. Agents run unconfined \(bwrap cannot create its namespaces here: bwrap: No permissions to create new namespace\)/);
  const ready = await readiness();
  assert.equal(ready.status, 200, 'still ready: runs are served');
  assert.equal(ready.body.status, 'ok');
  assert.equal(ready.body.warnings?.length, 1, JSON.stringify(ready.body));
  assert.equal(ready.body.warnings![0]!.code, 'sandbox_unconfined');
  assert.match(ready.body.warnings![0]!.detail, /^Confinement lost: .*Agents run unconfined .*SANDBOX_CONFINEMENT=required/);
});

test('SANDBOX_CONFINEMENT=required: the start is refused in one line, naming why', async () => {
  await platform.kill('SIGTERM');
  platform.env.SANDBOX_CONFINEMENT = 'required';
  const mark = platform.output().length;
  await assert.rejects(platform.restart(), /the platform exited \(75\)/);
  const said = platform.output().slice(mark).trim().split('\n').filter((l) => !l.startsWith('{'));
  assert.deepEqual(said, ['SANDBOX_CONFINEMENT=required, but the process sandbox cannot confine agents here (bwrap cannot create its namespaces here: bwrap: No permissions to create new namespace). Install bubblewrap on a host that allows user namespaces, or use RUN_ADAPTER=docker.']);
});
