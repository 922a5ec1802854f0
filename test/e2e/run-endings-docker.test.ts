// The run endings of run-endings.test.ts on RUN_ADAPTER=docker, through a really started platform:
// a run succeeds in its container pair, the timeout clamped to the ceiling, a cancel while running,
// a sidecar container killed (sandbox_lost) and one frozen (docker pause: its heartbeats stop,
// heartbeat_lost); after each, the run's containers are gone. (The worker killed mid-run:
// run-docker-worker-restart.test.ts.)
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Docker from 'dockerode';
import { DOCKER_WORK_FOLDER } from '../../activities/sandbox/docker-adapter.ts';
import { containersOfRun, DOCKER_REQUIRED, dockerForTests } from '../support/docker.ts';
import { anEndingsWorld, ECHO, type EndingsWorld } from './endings-world.ts';

const unavailable = await dockerForTests();

describe('run endings on the docker backend', { skip: unavailable ?? false }, () => {
  const docker = new Docker();
  let w: EndingsWorld;
  let workDir: string;

  before(async () => {
    // a ceiling past the 3 s a silent sandbox is given (3 heartbeats), so a frozen one is caught first
    w = await anEndingsWorld({ RUN_ADAPTER: 'docker', SANDBOX_WARM_POOL: '0', RUN_BOOT_SECONDS: '30', PLATFORM_RUN_LIMITS: '{"timeout_ceiling_seconds": 9}' });
    workDir = join(w.platform.dataDir, DOCKER_WORK_FOLDER);
  });
  after(() => w?.close());

  const containersOf = (runId: string) => containersOfRun(docker, workDir, runId);
  async function pairGone(runId: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    while ((await containersOf(runId)).length > 0) {
      if (Date.now() > deadline) assert.fail(`the containers of ${runId} are still there`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  async function runningPair(runId: string): Promise<Docker.ContainerInfo[]> {
    await w.running(runId);
    const pair = (await containersOf(runId)).filter((c) => c.State === 'running');
    assert.equal(pair.length, 2, 'an agent and a sidecar container run for the run');
    return pair;
  }
  const sidecarOf = (pair: Docker.ContainerInfo[]) => docker.getContainer(pair.find((c) => c.Names[0].includes('sidecar'))!.Id);

  test('a run succeeds in its container pair with its output; the pair goes with it', async () => {
    const run = await w.runToEnd(ECHO, { input: { message: 'in a container' }, model_id: w.models.fake });
    assert.equal(run.status, 'success', JSON.stringify(run.error));
    assert.ok(run.result.output, 'the run has its output');
    await pairGone(run.id);
  });

  test('the agent timeout is clamped to the ceiling: status timeout, run_timeout, the pair removed', async () => {
    const run = await w.runToEnd(ECHO, { input: { message: 'x' }, model_id: w.models['fake-hang'] });
    assert.equal(run.timeout_seconds, 9);
    assert.equal(run.status, 'timeout');
    assert.equal(run.error.code, 'run_timeout');
    await pairGone(run.id);
  });

  test('a cancel while running ends the run and removes its pair', async () => {
    const launched = (await w.api.post(ECHO, { input: { message: 'x' }, model_id: w.models['fake-hang'] })).body;
    await runningPair(launched.id);
    const cancelled = await w.api.post(`/api/runs/${launched.id}/cancel`, { reason: 'changed my mind' });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.status, 'cancelled');
    await pairGone(launched.id);
  });

  test('a sidecar container killed mid-run ends the run failed sandbox_lost; the agent container goes too', async () => {
    const launched = (await w.api.post(ECHO, { input: { message: 'x' }, model_id: w.models['fake-hang'] })).body;
    await sidecarOf(await runningPair(launched.id)).kill();
    const ended = (await w.api.get(`/api/runs/${launched.id}?wait=30`)).body;
    assert.equal(ended.status, 'failed');
    assert.equal(ended.error.code, 'sandbox_lost');
    await pairGone(launched.id);
  });

  test('a sidecar frozen mid-run (its heartbeats stop) ends the run failed heartbeat_lost; the pair is removed', async () => {
    const launched = (await w.api.post(ECHO, { input: { message: 'x' }, model_id: w.models['fake-hang'] })).body;
    await sidecarOf(await runningPair(launched.id)).pause();
    const ended = (await w.api.get(`/api/runs/${launched.id}?wait=30`)).body;
    assert.equal(ended.status, 'failed');
    assert.equal(ended.error.code, 'heartbeat_lost');
    await pairGone(launched.id);
  });
});

test('the docker run endings are tested here when CI requires it', () => {
  if (DOCKER_REQUIRED) assert.equal(unavailable, null, `docker is required here: ${unavailable}`);
});
