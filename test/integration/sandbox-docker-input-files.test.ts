// Input files on the docker backend: streamed from their source into the run's bound workspace
// folder (cold pair and pooled pair alike), then read whole by the agent's user in its container.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { SandboxSpec } from '../../activities/sandbox/adapter.ts';
import { aDockerWorld, execNode, type DockerWorld } from './sandbox-docker-harness.ts';
import { dockerForTests, DOCKER_REQUIRED } from '../support/docker.ts';
import { aSandboxSpec } from './sandbox-process-harness.ts';

const unavailable = await dockerForTests();
const MIB = 1024 * 1024;
const SIZE = 24 * MIB;

/** 1 MiB chunks, produced as they are read */
function source(seed: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent === SIZE) return void this.push(null);
      this.push(Buffer.alloc(MIB, (seed + sent / MIB) % 251));
      sent += MIB;
    },
  });
}

async function sha256Of(stream: Readable): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** node source run as the agent's user: the size and sha256 of each workspace file it names */
const readScript = (files: string[]) => `
const fs = require('fs'), crypto = require('crypto');
console.log(JSON.stringify(Object.fromEntries(${JSON.stringify(files)}.map((f) => {
  const bytes = fs.readFileSync('/workspace/' + f);
  return [f, { size: bytes.length, sha256: crypto.createHash('sha256').update(bytes).digest('hex') }];
}))));`;

describe('input files on the docker backend', { skip: unavailable ?? false }, () => {
  let world: DockerWorld;

  before(async () => {
    world = await aDockerWorld('sbx-docker-inputs-', { warmPool: 1, poolMemoryMb: 256, poolCpus: 1 });
  });
  after(() => world?.close());

  /** a run that stays (its model hangs) with two streamed input files beside its held files */
  const withInputs = (runId: string): SandboxSpec => {
    const spec = aSandboxSpec({ runId, eventsBaseUrl: world.receiver.url, secret: world.secret, modelUrl: world.model.url, memoryMb: 256 });
    spec.limits.cpus = 1;
    spec.sidecar.model = { ...spec.sidecar.model!, model: 'fake-hang' };
    spec.workspace.push({ path: 'input/a.bin', open: async () => source(1) }, { path: 'input/b.bin', open: async () => source(2) });
    return spec;
  };

  test('a pooled pair and a cold pair both get the files whole, readable by the agent', async () => {
    const expected = { size: SIZE, sha256: await sha256Of(source(1)) };
    const expectedB = { size: SIZE, sha256: await sha256Of(source(2)) };
    // the first run claims the waiting pair; the second (another memory ceiling) takes the cold path
    await world.adapter.whenWarm();
    const waiting = world.adapter.warmSandboxes();
    const pooled = await world.adapter.start(withInputs('run_docker_inputs_pooled'));
    assert.deepEqual([pooled.sandboxId], waiting, 'the run took the waiting pair');
    const coldSpec = withInputs('run_docker_inputs_cold');
    coldSpec.limits.memoryMb = 384;
    const cold = await world.adapter.start(coldSpec);
    try {
      for (const { sandboxId } of [pooled, cold]) {
        const seen = await execNode(world.adapter.docker, world.adapter.containers(sandboxId).agent, readScript(['input/a.bin', 'input/b.bin']));
        assert.deepEqual(seen, { 'input/a.bin': expected, 'input/b.bin': expectedB }, sandboxId);
      }
    } finally {
      await Promise.all([world.adapter.stop(pooled.sandboxId), world.adapter.stop(cold.sandboxId)]);
    }
  });
});

test('the docker input files are tested here when CI requires it', () => {
  if (DOCKER_REQUIRED) assert.equal(unavailable, null);
  else if (unavailable) assert.match(unavailable, /docker/);
});
