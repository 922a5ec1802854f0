// RUN_ADAPTER=docker through the whole platform: a run completes in its container pair, and a
// run whose worker is killed (SIGKILL) mid-run is re-attached by the restarted worker and succeeds.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Docker from 'dockerode';
import pg from 'pg';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDockerAdapter, DOCKER_WORK_FOLDER, LABEL_SANDBOX } from '../../activities/sandbox/docker-adapter.ts';
import { LoopbackRelays } from '../../activities/sandbox/docker-network.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { AGENT_IMAGE, containersOfRun, DOCKER_REQUIRED, dockerForTests, SIDECAR_IMAGE } from '../support/docker.ts';
import { client } from '../support/http.ts';
import { freePort, startPlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture, waitForStatus } from '../support/runs.ts';

const unavailable = await dockerForTests();

/** What a failed re-attach leaves to read: the pair's state and logs, the platform's output. */
async function diagnostics(docker: Docker, workDir: string, runId: string, platformOutput: string): Promise<string> {
  const lines: string[] = [];
  for (const c of await containersOfRun(docker, workDir, runId)) {
    const logs = (await docker.getContainer(c.Id).logs({ stdout: true, stderr: true, tail: 30 }).catch(() => Buffer.from(''))) as Buffer;
    lines.push(`${c.Names[0]}: ${c.State} ${c.Status}`, logs.toString('latin1').replace(/[\x00-\x08]/g, ''));
  }
  lines.push('platform output:', platformOutput.slice(-6000));
  return lines.join('\n');
}

/** a failed run's pair would outlive the test: removed with its network */
async function removePairsOf(docker: Docker, workDir: string, runIds: string[]): Promise<void> {
  for (const runId of runIds) {
    for (const c of await containersOfRun(docker, workDir, runId)) {
      const filters = { label: [`${LABEL_SANDBOX}=${c.Labels[LABEL_SANDBOX]}`] };
      for (const part of await docker.listContainers({ all: true, filters })) await docker.getContainer(part.Id).remove({ force: true }).catch(() => undefined);
      for (const n of await docker.listNetworks({ filters })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
    }
  }
}

describe('runs on the docker backend', { skip: unavailable ?? false }, () => {
  test('the worker killed with SIGKILL mid-run is restarted, re-attaches to the live pair, and the run succeeds', async () => {
    // each model turn takes 1.5 s: the run is still going while the worker is down
    const fake = await startFakeModel({ latencyMs: 1500 });
    const docker = new Docker();
    // The model provider stands outside the worker, as a real one would: the test's own relay on the
    // egress network (the worker's relays go down with it) leads to the fake model on loopback.
    const gateway = await createDockerAdapter({ workDir: await mkdtemp(join(tmpdir(), 'docker-e2e-')), sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE })
      .then(async (a) => (await a.close(), a.gateway));
    const modelRelay = new LoopbackRelays(gateway, 'ap-egress0');
    const relayPort = await modelRelay.portFor(new URL(fake.url).host, await freePort());
    const modelUrl = fake.url.replace(new URL(fake.url).host, `${gateway}:${relayPort}`);
    // a warm pool: the run may claim a pooled pair, whose run only the claim in its folder names
    const platform = await startPlatformProcess({
      env: {
        LOG_LEVEL: 'info', RUN_ADAPTER: 'docker', RUN_HEARTBEAT_SECONDS: '1', RUN_BOOT_SECONDS: '30', EGRESS_ALLOW_INTERNAL_HOSTS: `${gateway}:${relayPort}`,
        SANDBOX_WARM_POOL: '1',
      },
    });
    const workDir = join(platform.dataDir, DOCKER_WORK_FOLDER);
    const pool = new pg.Pool({ connectionString: platform.db.url, max: 2 });
    const runIds: string[] = [];
    try {
      const org = await anOrg(pool);
      const { key } = await aKey(pool, { ...org, userId: org.ownerId });
      await importFixture(platform.url, key, 'agent-echo');
      await aDefaultModel(platform.url, key, modelUrl, 'fake');
      const api = client(platform.url, { key });
      const run = (await api.post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'x' } })).body;
      runIds.push(run.id);
      await waitForStatus(api, run.id, (s) => s === 'running', 30_000);
      const pair = (await containersOfRun(docker, workDir, run.id)).filter((c) => c.State === 'running');
      assert.equal(pair.length, 2, 'an agent and a sidecar container run for the run');

      await platform.kill('SIGKILL');
      // the pair is still there while no worker is, and so are the pooled pairs no run claimed
      assert.equal((await containersOfRun(docker, workDir, run.id)).filter((c) => c.State === 'running').length, 2);
      const unclaimed = (await containersOfRun(docker, workDir, null)).map((c) => c.Labels[LABEL_SANDBOX]);
      await platform.restart();
      const ended = await waitForStatus(api, run.id, (s) => !['pending', 'running'].includes(s), 60_000).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await diagnostics(docker, workDir, run.id, platform.output())}`);
      });
      assert.equal(ended.status, 'success', `${JSON.stringify(ended.error ?? ended)}\n${await diagnostics(docker, workDir, run.id, platform.output())}`);
      // the killed worker's waiting pairs were no run's: the restarted one removed them
      for (const sandboxId of unclaimed) {
        assert.equal((await docker.listContainers({ all: true, filters: { label: [`${LABEL_SANDBOX}=${sandboxId}`] } })).length, 0, `pooled ${sandboxId} removed`);
      }
      // torn down once the run ended
      for (let i = 0; i < 100 && (await containersOfRun(docker, workDir, run.id)).length > 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal((await containersOfRun(docker, workDir, run.id)).length, 0);
    } finally {
      await removePairsOf(docker, workDir, runIds);
      await pool.end();
      await platform.stop();
      await modelRelay.close();
      await fake.close();
    }
  });
});

test('the docker re-attach scenario is tested here when CI requires it', () => {
  if (DOCKER_REQUIRED) assert.equal(unavailable, null);
  else if (unavailable) assert.match(unavailable, /docker/);
});
