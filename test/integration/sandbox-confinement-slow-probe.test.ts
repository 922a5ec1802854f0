// A loaded host (a restart with many runs resuming) makes the confinement probe slow, and slow is
// not refused: a bubblewrap that takes longer than a quiet host's start to answer its first probe
// still confines the agents, rather than leaving them unconfined for the life of the process.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { findBubblewrap } from '../../activities/sandbox/confinement.ts';
import { createProcessAdapter } from '../../activities/sandbox/process-adapter.ts';

const DELAY_S = 12;

test(`bubblewrap answering its first probe ${DELAY_S} s late still confines the agents`, async () => {
  const bwrap = findBubblewrap();
  assert.ok(bwrap, 'bubblewrap is installed (.ci/run installs it)');
  const dir = await mkdtemp(join(tmpdir(), 'confinement-slow-'));
  const pathBefore = process.env.PATH;
  try {
    // the host's bwrap, its first call held back as a starved CPU would hold it
    await writeFile(join(dir, 'bwrap'), `#!/bin/sh\nif mkdir '${dir}/answered' 2>/dev/null; then sleep ${DELAY_S}; fi\nexec '${bwrap}' "$@"\n`);
    await chmod(join(dir, 'bwrap'), 0o755);
    process.env.PATH = `${dir}:${pathBefore}`;
    const began = Date.now();
    const adapter = await createProcessAdapter({ warmPool: 0, workDir: join(dir, 'adapter') });
    try {
      assert.ok(Date.now() - began >= DELAY_S * 1000, 'the slow probe was waited for');
      assert.equal(adapter.isolation.confinement, 'bubblewrap', JSON.stringify(adapter.isolation));
    } finally {
      await adapter.close();
    }
  } finally {
    process.env.PATH = pathBefore;
    await rm(dir, { recursive: true, force: true });
  }
});
