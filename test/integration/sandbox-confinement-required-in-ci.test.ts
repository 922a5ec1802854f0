// CI must test the confined sandbox, not silently fall back to the unconfined one: under CI (or
// REQUIRE_CONFINEMENT=1) bubblewrap has to be on PATH and able to confine a program here, and the
// process adapter has to choose it.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { findBubblewrap, probeBubblewrap } from '../../activities/sandbox/confinement.ts';
import { createProcessAdapter } from '../../activities/sandbox/process-adapter.ts';
import { REPO } from './sidecar-run-harness.ts';

const required = process.env.CI === 'true' || process.env.REQUIRE_CONFINEMENT === '1';

test(`the confined sandbox path is ${required ? 'required here (CI) and available' : 'checked when bubblewrap is present'}`, async () => {
  const bwrap = findBubblewrap();
  if (required) assert.ok(bwrap, 'CI runs the sandbox tests confined: bwrap must be on PATH (.ci/run installs bubblewrap)');
  if (!bwrap) return;
  const dir = await mkdtemp(join(tmpdir(), 'confinement-ci-'));
  try {
    // the adapter builds the program bundles the confined view binds
    const adapter = await createProcessAdapter({ warmPool: 0, workDir: join(dir, 'adapter') });
    try {
      assert.equal(adapter.isolation.confinement, 'bubblewrap', JSON.stringify(adapter.isolation));
    } finally {
      await adapter.close();
    }
    const probe = await probeBubblewrap(bwrap, { root: REPO, workspaceDir: dir, ipcDir: dir });
    assert.deepEqual(probe, { ok: true }, 'bubblewrap is installed but cannot confine a program on this machine');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
