// The compose deployment (docker/compose.yaml), started as the README says (docker/compose-up.sh:
// images from local files, then `up`): the README's first run against one of its API replicas
// (claim, key, the scripted model on the host, agent-echo imported, a run that succeeds), the same
// through the other replica, then platform-worker restarted with a run in flight: that run still
// reaches its ending (the process backend's: its sandbox went with the worker, sandbox_lost), and
// the next one succeeds. The stack is torn down with its volumes.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { DOCKER_REQUIRED, dockerForTests } from '../support/docker.ts';
import { client } from '../support/http.ts';
import { importFixture } from '../support/runs.ts';

const run = promisify(execFile);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

/** the compose client here: `docker compose` (v2), else docker-compose (v1); null when neither */
function composeClient(): string[] | null {
  if (spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0) return ['docker', 'compose'];
  if (spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0) return ['docker-compose'];
  return null;
}

const dockerUnavailable = await dockerForTests();
const compose = dockerUnavailable ? null : composeClient();
const unavailable = dockerUnavailable ?? (compose ? null : 'no compose client (apt-get install docker-compose)');

async function waitForStatus(api: ReturnType<typeof client>, runId: string, wanted: (s: string) => boolean, ms: number): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await api.get(`/api/runs/${runId}`).catch(() => null);
    if (res?.status === 200 && wanted(res.body.status)) return res.body;
    if (Date.now() > deadline) throw new Error(`run ${runId} did not reach the wanted status (last: ${res?.body?.status})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The scripted model on the host, reached by the deployment at its network's gateway (an address of this host). */
function relayTo(target: number, host: string, port: number): Promise<net.Server> {
  const server = net.createServer((inbound) => {
    const outbound = net.connect({ host: '127.0.0.1', port: target });
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
  });
  return new Promise((resolve, reject) => server.once('error', reject).listen(port, host, () => resolve(server)));
}

describe('the compose deployment', { skip: unavailable ?? false }, () => {
  const project = `aptest${randomBytes(3).toString('hex')}`;
  const third = 100 + Math.floor(Math.random() * 100);
  const gateway = `172.30.${third}.1`;
  const modelPort = 20_000 + Math.floor(Math.random() * 10_000);
  const envFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'compose-')), 'compose.env');
  const env = { ...process.env, COMPOSE_PROJECT_NAME: project, AP_COMPOSE_ENV: envFile, AP_SUBNET: `172.30.${third}.0/24`, AP_EGRESS_ALLOW_INTERNAL_HOSTS: `${gateway}:${modelPort}` };
  const dc = (...args: string[]) => run(compose![0], [...compose!.slice(1), '--env-file', envFile, '-f', 'docker/compose.yaml', ...args], { cwd: root, env, maxBuffer: 64 * 1024 * 1024 });
  let model: FakeModel;
  let relay: net.Server | undefined;
  let apis: string[] = [];

  before(async () => {
    // each model turn takes a while: a run is still going when its worker restarts
    model = await startFakeModel({ latencyMs: 1500 });
    await run('docker/compose-up.sh', [], { cwd: root, env, maxBuffer: 64 * 1024 * 1024 });
    relay = await relayTo(Number(new URL(model.url).port), gateway, modelPort);
    for (const index of [1, 2]) apis.push(`http://${(await dc('port', `--index=${index}`, 'platform-api', '3000')).stdout.trim()}`);
    for (const base of apis) {
      for (let i = 0; ; i++) {
        if (await fetch(`${base}/health/ready`).then((r) => r.ok, () => false)) break;
        if (i > 600) throw new Error(`${base} did not become ready:\n${(await dc('logs', '--tail=60')).stdout}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  });
  after(async () => {
    await dc('down', '-v', '--remove-orphans').catch(() => undefined);
    relay?.close();
    await model?.close();
    fs.rmSync(path.dirname(envFile), { recursive: true, force: true });
  });

  test('one command starts it; the first run succeeds through either API replica; a run in flight when platform-worker restarts still ends, and the next succeeds', async () => {
    assert.equal(apis.length, 2);
    assert.equal((await dc('ps', '-q', 'platform-api')).stdout.trim().split('\n').length, 2, 'two API replicas');
    const token = /AP_BOOTSTRAP_TOKEN=(\S+)/.exec(fs.readFileSync(envFile, 'utf8'))![1];
    const [a, b] = apis;

    // 1. claim, 2. a key, 3. the scripted model, 4. agent-echo, 5. a run: the README's first run
    const claim = await fetch(`${a}/api/auth/bootstrap/redeem`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, email: 'me@example.com', password: 'a long passphrase', name: 'Me' }),
    });
    assert.equal(claim.status, 201, await claim.clone().text());
    const { org_id: org, space_id: space } = (await claim.json()) as { org_id: string; space_id: string };
    const cookie = claim.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const keyRes = await fetch(`${a}/api/api-keys`, {
      method: 'POST', headers: { 'content-type': 'application/json', cookie, 'x-org-id': org, 'x-space-id': space }, body: JSON.stringify({ name: 'laptop' }),
    });
    assert.equal(keyRes.status, 201, await keyRes.clone().text());
    const { key } = (await keyRes.json()) as { key: string };
    const api = client(a, { key });
    const cred = await api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'local', base_url: `http://${gateway}:${modelPort}/v1`, api_key: 'x' });
    assert.equal(cred.status, 201, JSON.stringify(cred.body));
    const created = await api.post('/api/models', { credential_id: cred.body.id, model: 'fake', name: 'fake', is_default: true });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await importFixture(a, key, 'agent-echo');

    const logsOnFailure = async (err: Error) => {
      throw new Error(`${err.message}\n${(await dc('logs', '--tail=80', 'platform-worker')).stdout.slice(-8000)}`);
    };
    const launch = async (base: string) => {
      const res = await client(base, { key }).post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'hello' } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id as string;
    };
    const first = await waitForStatus(api, await launch(a), (s) => !['pending', 'running'].includes(s), 120_000).catch(logsOnFailure);
    assert.equal(first.status, 'success', JSON.stringify(first.error ?? first));
    // the other replica serves the same deployment (one database, one engine)
    const viaB = await waitForStatus(client(b, { key }), await launch(b), (s) => !['pending', 'running'].includes(s), 120_000).catch(logsOnFailure);
    assert.equal(viaB.status, 'success', JSON.stringify(viaB.error ?? viaB));

    // platform-worker restarts with a run in flight
    const inFlight = await launch(a);
    await waitForStatus(api, inFlight, (s) => s === 'running', 60_000).catch(logsOnFailure);
    await dc('restart', 'platform-worker');
    const ended = await waitForStatus(api, inFlight, (s) => !['pending', 'running'].includes(s), 120_000).catch(logsOnFailure);
    // the process backend's sandbox lives in the worker: it went with it, and the run says so
    assert.equal(ended.status, 'failed', JSON.stringify(ended));
    assert.equal(ended.error?.code, 'sandbox_lost', JSON.stringify(ended.error));
    const next = await waitForStatus(api, await launch(a), (s) => !['pending', 'running'].includes(s), 120_000).catch(logsOnFailure);
    assert.equal(next.status, 'success', JSON.stringify(next.error ?? next));
  });
});

test('the compose deployment is tested here when CI requires it', () => {
  if (DOCKER_REQUIRED) assert.equal(unavailable, null);
  else if (unavailable) assert.match(unavailable, /docker|compose/);
});
