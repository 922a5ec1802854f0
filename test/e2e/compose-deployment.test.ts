// The compose deployment (docker/compose.yaml), started as docs/operators.md says (docker/compose-up.sh:
// images from local files, then `up`): the first run of docs/integrators.md against one of its API replicas
// (claim, key, the scripted model on the host, agent-echo imported, a run that succeeds), the same
// through the other replica; a file uploaded through one replica is read through the other (the
// shared object store); then one node of the three-node Restate cluster is killed with runs in
// flight: every run succeeds, none runs twice (the model is asked as often as for one run each), and
// a run launched afterwards succeeds with the node still gone; then platform-worker restarted with two runs in flight: the worker
// runs the docker backend, so their containers outlive it, the restarted worker adopts them, and
// the runs succeed with their output; the next one succeeds too, and the containers of the
// finished runs are gone. Last, docker/compose-down.sh -v with a run in flight removes the stack
// with its data: no sandbox container, run network or host firewall rule of the deployment is
// left, nor the worker's data directory.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import Docker from 'dockerode';
import { DOCKER_WORK_FOLDER, LABEL_SANDBOX } from '../../activities/sandbox/docker-adapter.ts';
import { names } from '../../activities/sandbox/docker-specs.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { containersOfRun, DOCKER_REQUIRED, dockerForTests } from '../support/docker.ts';
import { client, http2Status } from '../support/http.ts';
import { importFixture, waitForStatus } from '../support/runs.ts';

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

/** a run's sandbox, found by its label or, for a pooled pair, its claim in the worker's folder; remembered once found */
const sandboxOfRun = new Map<string, string>();

/** The deployment's sandboxes as the engine lists them: each run's containers and run network. */
async function sandboxesOf(docker: Docker, workDir: string, runIds: string[]): Promise<Array<{ runId: string; sandboxId: string; kind: string; state?: string }>> {
  const found = [];
  for (const runId of runIds) {
    if (!sandboxOfRun.has(runId) && fs.existsSync(workDir)) {
      const [c] = await containersOfRun(docker, workDir, runId);
      if (c) sandboxOfRun.set(runId, c.Labels[LABEL_SANDBOX]);
    }
    const sandboxId = sandboxOfRun.get(runId);
    if (!sandboxId) continue;
    const filters = { label: [`${LABEL_SANDBOX}=${sandboxId}`] };
    for (const c of await docker.listContainers({ all: true, filters })) found.push({ runId, sandboxId, kind: c.Names[0], state: c.State });
    for (const n of await docker.listNetworks({ filters })) found.push({ runId, sandboxId, kind: `network ${n.Name}` });
  }
  return found;
}

/** a model turn of the runs that must still be going while the worker restarts or the stack goes down */
const SLOW_TURN_MS = 30_000;
/** a model turn of the runs in flight while a Restate node is killed */
const THROUGH_THE_LOSS_TURN_MS = 25_000;

const firewallRules = () => spawnSync('iptables', ['-S', 'INPUT'], { encoding: 'utf8' }).stdout ?? '';

describe('the compose deployment', { skip: unavailable ?? false }, () => {
  const project = `aptest${randomBytes(3).toString('hex')}`;
  const third = 100 + Math.floor(Math.random() * 100);
  const gateway = `172.30.${third}.1`;
  const modelPort = 20_000 + Math.floor(Math.random() * 10_000);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'compose-'));
  const envFile = path.join(scratch, 'compose.env');
  const workerData = path.join(scratch, 'worker');
  const workDir = path.join(workerData, DOCKER_WORK_FOLDER);
  const env = {
    ...process.env, COMPOSE_PROJECT_NAME: project, AP_COMPOSE_ENV: envFile, AP_SUBNET_PREFIX: `172.30.${third}`,
    AP_WORKER_DATA_DIR: workerData, AP_EGRESS_ALLOW_INTERNAL_HOSTS: `${gateway}:${modelPort}`,
  };
  const dc = (...args: string[]) => run(compose![0], [...compose!.slice(1), '--env-file', envFile, '-f', 'docker/compose.yaml', ...args], { cwd: root, env, maxBuffer: 64 * 1024 * 1024 });
  const composeDown = () => run('docker/compose-down.sh', ['-v', '--remove-orphans'], { cwd: root, env, maxBuffer: 64 * 1024 * 1024 });
  const docker = new Docker();
  const runIds: string[] = [];
  let model: FakeModel;
  let relay: net.Server | undefined;
  let apis: string[] = [];

  before(async () => {
    model = await startFakeModel({});
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
    await composeDown().catch(() => undefined);
    relay?.close();
    await model?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  test('one command starts it; the first run succeeds through either API replica; files are shared; runs in flight when a Restate node is killed or platform-worker restarts succeed, and the next too; down -v leaves nothing behind', async () => {
    const started = Date.now();
    const lap = (what: string) => process.stdout.write(`# compose: ${what} at ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    assert.equal(apis.length, 2);
    assert.equal((await dc('ps', '-q', 'platform-api')).stdout.trim().split('\n').length, 2, 'two API replicas');
    const token = /AP_BOOTSTRAP_TOKEN=(\S+)/.exec(fs.readFileSync(envFile, 'utf8'))![1];
    const [a, b] = apis;

    // 1. claim, 2. a key, 3. the scripted model, 4. agent-echo, 5. a run: the first run of docs/integrators.md
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
      runIds.push(res.body.id);
      return res.body.id as string;
    };
    const ending = (base: string, runId: string) => waitForStatus(client(base, { key }), runId, (s) => !['pending', 'running'].includes(s), 120_000).catch(logsOnFailure);
    const OUTPUT = { echo: 'hello' };
    const asked = model.requests.length;
    const first = await ending(a, await launch(a));
    // how often one run asks the model: a run executed twice would ask more
    const askedPerRun = model.requests.length - asked;
    assert.ok(askedPerRun >= 1, 'a run asks the scripted model');
    assert.equal(first.status, 'success', JSON.stringify(first.error ?? first));
    assert.deepEqual(first.result?.output, OUTPUT);
    // the other replica serves the same deployment (one database, one engine)
    const viaB = await ending(b, await launch(b));
    assert.equal(viaB.status, 'success', JSON.stringify(viaB.error ?? viaB));
    lap('two first runs done');
    // the worker's endpoint, on the host's address, serves only calls Restate signed
    assert.equal(await http2Status(`http://${gateway}:9080`, 'GET', '/discover', { accept: 'application/vnd.restate.endpointmanifest.v1+json' }), 401);
    assert.equal(fs.statSync(path.join(workerData, 'restate-identity.pem')).mode & 0o777, 0o640);

    // one file store for every replica (and worker): uploaded through a, read through b
    const content = `shared by the replicas ${randomBytes(4).toString('hex')}`;
    const staged = await api.post('/api/uploads', { name: 'shared.txt', size: Buffer.byteLength(content), mime_type: 'text/plain' });
    assert.equal(staged.status, 201, JSON.stringify(staged.body));
    const uploadUrl = new URL(staged.body.upload_url);
    const written = await fetch(`${a}${uploadUrl.pathname}${uploadUrl.search}`, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: content });
    assert.equal(written.status, 201, await written.clone().text());
    const { id: fileId } = (await written.json()) as { id: string };
    const readThroughB = await client(b, { key }).get(`/api/files/${fileId}/content`);
    assert.equal(readThroughB.status, 200, readThroughB.text);
    assert.equal(readThroughB.text, content);
    lap('a file shared by the replicas');

    // Restate is three nodes with replication 2: restate-1 (first in every platform process's list
    // of addresses) is killed while runs are in flight; they all succeed, each run once
    // (each model turn outlasts the six launches and the kill)
    model.setLatency(THROUGH_THE_LOSS_TURN_MS);
    const askedBefore = model.requests.length;
    const throughTheLoss = await Promise.all([a, b, a, b, a, b].map((base) => launch(base)));
    for (const runId of throughTheLoss) await waitForStatus(api, runId, (s) => s === 'running', 60_000).catch(logsOnFailure);
    lap('killing restate-1');
    await dc('kill', 'restate-1');
    const [killed] = (await dc('ps', '-q', 'restate-1')).stdout.trim().split('\n');
    assert.equal((await docker.getContainer(killed).inspect()).State.Running, false, 'restate-1 is down');
    for (const runId of throughTheLoss) {
      const ended = await ending(a, runId);
      assert.equal(ended.status, 'success', JSON.stringify(ended.error ?? ended));
      assert.deepEqual(ended.result?.output, OUTPUT);
    }
    assert.equal(model.requests.length - askedBefore, throughTheLoss.length * askedPerRun, 'no run asked the model more often than one run does: none ran twice');
    lap('the runs through the loss of restate-1 ended');
    model.setLatency(0);
    const afterTheLoss = await ending(b, await launch(b));
    assert.equal(afterTheLoss.status, 'success', JSON.stringify(afterTheLoss.error ?? afterTheLoss));
    lap('a run after the loss of restate-1 ended');

    // platform-worker restarts with runs in flight, one launched through each replica (each model
    // turn now takes longer than the worker's stop and start): their pairs of containers outlive
    // the worker, the next adopts them
    model.setLatency(SLOW_TURN_MS);
    const inFlight = [await launch(a), await launch(b)];
    for (const runId of inFlight) await waitForStatus(api, runId, (s) => s === 'running', 60_000).catch(logsOnFailure);
    const pairs = (await sandboxesOf(docker, workDir, inFlight)).filter((p) => !p.kind.startsWith('network'));
    assert.equal(pairs.length, 4, `each run's sidecar and agent containers: ${JSON.stringify(pairs)}`);
    lap('restarting the worker');
    await dc('restart', 'platform-worker');
    lap('worker restarted');
    const after = (await sandboxesOf(docker, workDir, inFlight)).filter((p) => !p.kind.startsWith('network'));
    assert.deepEqual(after.map((p) => [p.kind, p.state]).sort(), pairs.map((p) => [p.kind, 'running']).sort(), 'the same pairs run on');
    // the turns asked before the restart keep their latency; the rest of each run goes at once, so the
    // runs end well within their timeout however long the restart took
    model.setLatency(0);
    for (const runId of inFlight) {
      const ended = await ending(a, runId);
      assert.equal(ended.status, 'success', JSON.stringify(ended.error ?? ended));
      assert.deepEqual(ended.result?.output, OUTPUT);
    }
    lap('the runs in flight ended');
    const logs = (await dc('logs', 'platform-worker')).stdout;
    for (const p of pairs) assert.match(logs, new RegExp(`docker sandboxes adopted.*${p.sandboxId}`));
    model.setLatency(0);
    const next = await ending(a, await launch(a));
    assert.equal(next.status, 'success', JSON.stringify(next.error ?? next));
    lap('the next run ended');

    // the finished runs' containers and networks are removed (by their workflows, else the reaper)
    for (let i = 0; (await sandboxesOf(docker, workDir, runIds)).length > 0; i++) {
      if (i > 150) assert.deepEqual(await sandboxesOf(docker, workDir, runIds), [], 'the sandboxes of the finished runs are gone');
      await new Promise((r) => setTimeout(r, 200));
    }
    lap('their sandboxes removed');

    // taken down with its data while a run goes on: its sandbox goes too, with its firewall rules
    model.setLatency(SLOW_TURN_MS);
    const last = await launch(a);
    await waitForStatus(api, last, (s) => s === 'running', 60_000).catch(logsOnFailure);
    const left = await sandboxesOf(docker, workDir, [last]);
    assert.ok(left.length >= 2, JSON.stringify(left));
    const bridge = names(left[0].sandboxId).bridge;
    assert.match(firewallRules(), new RegExp(bridge));
    // the worker's warm pool: pairs no run claimed, which go down with it too
    const waiting = [...new Set((await containersOfRun(docker, workDir, null)).map((c) => c.Labels[LABEL_SANDBOX]))];
    await composeDown();
    lap('down -v');
    assert.deepEqual(await sandboxesOf(docker, workDir, runIds), []);
    for (const sandboxId of waiting) assert.deepEqual(await docker.listContainers({ all: true, filters: { label: [`${LABEL_SANDBOX}=${sandboxId}`] } }), []);
    assert.doesNotMatch(firewallRules(), new RegExp(bridge));
    assert.equal(fs.existsSync(workerData), false, 'the worker data directory is removed');
    assert.equal((await docker.listContainers({ all: true, filters: { label: [`com.docker.compose.project=${project}`] } })).length, 0);
  });
});

test('the compose deployment is tested here when CI requires it', () => {
  if (DOCKER_REQUIRED) assert.equal(unavailable, null);
  else if (unavailable) assert.match(unavailable, /docker|compose/);
});
