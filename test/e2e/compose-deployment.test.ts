// The compose deployment (docker/compose.yaml), started as docs/operators.md says (docker/compose-up.sh:
// images from local files, then `up`) with two workers (`--scale platform-worker=2`): the first run of
// docs/integrators.md against one of its API replicas (claim, key, the scripted model on the host,
// agent-echo imported, a run that succeeds), the same through the other replica; a file uploaded
// through one replica is read through the other (the shared object store). Then 20 runs, spread over
// both workers, are in flight (the scripted model holds their answers) when one node of the
// three-node Restate cluster and the worker that is not the workflow home are killed: every run
// ends once; those the lost worker had started end sandbox_lost within two liveness periods, those
// it had not started succeed on the other worker, the others succeed, asking the model as often as
// one run does (none ran twice). A run launched afterwards succeeds across a restart of the
// remaining worker (the docker backend: its containers outlive the worker, the restarted worker
// adopts them). Last, docker/compose-down.sh -v with a run in flight removes the stack with its data:
// no sandbox container, run network or host firewall rule of the deployment is left (the lost
// worker's included), nor the workers' data directories.
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
import pg from 'pg';
import { DOCKER_WORK_FOLDER, LABEL_SANDBOX } from '../../activities/sandbox/docker-adapter.ts';
import { ownedBy } from '../../activities/sandbox/docker-adoption.ts';
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

/** a run's sandbox, found by its label or, for a pooled pair, its claim in a worker's folder; remembered once found */
const sandboxOfRun = new Map<string, string>();

/** The sandboxes of the given workers' folders as the engine lists them: each run's containers and run network. */
async function sandboxesOf(docker: Docker, workDirs: string[], runIds: string[]): Promise<Array<{ runId: string; sandboxId: string; kind: string; state?: string }>> {
  const found = [];
  for (const runId of runIds) {
    for (const workDir of workDirs) {
      if (sandboxOfRun.has(runId) || !fs.existsSync(workDir)) continue;
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

async function until<T>(what: string, ms: number, probe: () => Promise<T | null | undefined | false>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out (${ms} ms) waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The fleet's timings in this deployment (every platform process): beats every 5 s, lost after 6
 * missed (a 30 s window). Noticing a loss takes the window, then up to a liveness tick and a check
 * period, plus the engine's steps: on a busy 2-core machine with three engine nodes these added 10 to
 * 15 s, so a 15 s window (the default 3 beats) sat at its bound of two windows.
 */
const WORKER_HEARTBEAT_SECONDS = 5;
const WORKER_LOST_HEARTBEATS = 6;
/** the fleet's liveness period: a worker silent this long is lost */
const LOSS_WINDOW_MS = WORKER_HEARTBEAT_SECONDS * WORKER_LOST_HEARTBEATS * 1000;
/** the runs in flight when a Restate node and a worker are killed */
const FLEET_RUNS = 20;

const firewallRules = () => spawnSync('iptables', ['-S', 'INPUT'], { encoding: 'utf8' }).stdout ?? '';
const ended = (s: string) => !['pending', 'running'].includes(s);

describe('the compose deployment', { skip: unavailable ?? false }, () => {
  const project = `aptest${randomBytes(3).toString('hex')}`;
  const third = 100 + Math.floor(Math.random() * 100);
  const prefix = `172.30.${third}`;
  const gateway = `${prefix}.1`;
  const modelPort = 20_000 + Math.floor(Math.random() * 10_000);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'compose-'));
  const envFile = path.join(scratch, 'compose.env');
  const workerData = path.join(scratch, 'worker');
  // replica 1 keeps its data in AP_WORKER_DATA_DIR, replica 2 in worker-2 inside it (docker/worker-entry.mjs)
  const workDirOf = (replica: number) => path.join(replica === 1 ? workerData : path.join(workerData, `worker-${replica}`), DOCKER_WORK_FOLDER);
  const workDirs = [workDirOf(1), workDirOf(2)];
  const env = {
    ...process.env, COMPOSE_PROJECT_NAME: project, AP_COMPOSE_ENV: envFile, AP_SUBNET_PREFIX: prefix,
    AP_WORKER_DATA_DIR: workerData, AP_EGRESS_ALLOW_INTERNAL_HOSTS: `${gateway}:${modelPort}`,
    AP_WORKER_HEARTBEAT_SECONDS: String(WORKER_HEARTBEAT_SECONDS), AP_WORKER_LOST_HEARTBEATS: String(WORKER_LOST_HEARTBEATS),
    AP_RUN_HEARTBEAT_SECONDS: '3',
  };
  const dc = (...args: string[]) => run(compose![0], [...compose!.slice(1), '--env-file', envFile, '-f', 'docker/compose.yaml', ...args], { cwd: root, env, maxBuffer: 64 * 1024 * 1024 });
  const composeDown = () => run('docker/compose-down.sh', ['-v', '--remove-orphans'], { cwd: root, env, maxBuffer: 64 * 1024 * 1024 });
  const docker = new Docker();
  const runIds: string[] = [];
  let model: FakeModel;
  let relay: net.Server | undefined;
  let pool: pg.Pool | undefined;
  let apis: string[] = [];
  let upSeconds = 0;

  // a test run stopped from outside (the runner's timeout, Ctrl-C) skips after(): the stack goes down here then
  const downOnSignal = (signal: NodeJS.Signals) => {
    spawnSync('docker/compose-down.sh', ['-v', '--remove-orphans'], { cwd: root, env, stdio: 'ignore', timeout: 240_000 });
    fs.rmSync(scratch, { recursive: true, force: true });
    process.kill(process.pid, signal);
  };

  before(async () => {
    process.once('SIGTERM', downOnSignal);
    process.once('SIGINT', downOnSignal);
    const started = Date.now();
    model = await startFakeModel({});
    await run('docker/compose-up.sh', ['--scale', 'platform-worker=2'], { cwd: root, env, maxBuffer: 64 * 1024 * 1024 });
    relay = await relayTo(Number(new URL(model.url).port), gateway, modelPort);
    for (const index of [1, 2]) apis.push(`http://${(await dc('port', `--index=${index}`, 'platform-api', '3000')).stdout.trim()}`);
    for (const base of apis) {
      for (let i = 0; ; i++) {
        if (await fetch(`${base}/health/ready`).then((r) => r.ok, () => false)) break;
        if (i > 600) throw new Error(`${base} did not become ready:\n${(await dc('logs', '--tail=60')).stdout}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    // the deployment's database, at its fixed address (the host reaches the deployment's network)
    const password = /AP_DB_PASSWORD=(\S+)/.exec(fs.readFileSync(envFile, 'utf8'))![1];
    pool = new pg.Pool({ connectionString: `postgres://postgres:${password}@${prefix}.2:5432/postgres`, max: 2 });
    // the deployment's database goes down before this pool does (down -v): an idle client's error is expected then
    pool.on('error', () => undefined);
    upSeconds = (Date.now() - started) / 1000;
  });
  after(async () => {
    process.off('SIGTERM', downOnSignal);
    process.off('SIGINT', downOnSignal);
    model?.setHold(false);
    await pool?.end().catch(() => undefined);
    await composeDown().catch(() => undefined);
    relay?.close();
    await model?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  test('one command starts it with two workers; the first run succeeds through either API replica; files are shared; 20 runs spread over both workers outlive a Restate node and end as the fleet rules say when a worker is killed; a run after succeeds across a worker restart; down -v leaves nothing behind', async () => {
    const started = Date.now();
    const lap = (what: string) => process.stdout.write(`# compose: ${what} at ${((Date.now() - started) / 1000).toFixed(1)} s (up took ${upSeconds.toFixed(1)} s)\n`);
    const db = pool!;
    assert.equal(apis.length, 2);
    assert.equal((await dc('ps', '-q', 'platform-api')).stdout.trim().split('\n').length, 2, 'two API replicas');
    assert.equal((await dc('ps', '-q', 'platform-worker')).stdout.trim().split('\n').length, 2, 'two workers');
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
    // launches spread over several keys, so the per-caller launch limit (20 a minute) never answers
    const keys: string[] = [];
    for (const name of ['laptop', 'ci-1', 'ci-2', 'ci-3']) {
      const keyRes = await fetch(`${a}/api/api-keys`, {
        method: 'POST', headers: { 'content-type': 'application/json', cookie, 'x-org-id': org, 'x-space-id': space }, body: JSON.stringify({ name }),
      });
      assert.equal(keyRes.status, 201, await keyRes.clone().text());
      keys.push(((await keyRes.json()) as { key: string }).key);
    }
    const [key] = keys;
    const api = client(a, { key });
    const cred = await api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'local', base_url: `http://${gateway}:${modelPort}/v1`, api_key: 'x' });
    assert.equal(cred.status, 201, JSON.stringify(cred.body));
    const created = await api.post('/api/models', { credential_id: cred.body.id, model: 'fake', name: 'fake', is_default: true });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await importFixture(a, key, 'agent-echo');

    const logsOnFailure = async (err: Error) => {
      throw new Error(`${err.message}\n${(await dc('logs', '--tail=60', 'platform-worker')).stdout.slice(-10000)}`);
    };
    // each run echoes its own message, so the model's requests tell which run asked
    const messageOf = new Map<string, string>();
    const launch = async (base: string) => {
      const message = `msg${String(runIds.length).padStart(3, '0')}z${randomBytes(3).toString('hex')}`;
      const res = await client(base, { key: keys[runIds.length % keys.length] }).post('/api/agents/@fixtures/agent-echo/run', { input: { message } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      runIds.push(res.body.id);
      messageOf.set(res.body.id, message);
      return res.body.id as string;
    };
    const asked = (runId: string) => model.requests.filter((r) => JSON.stringify(r.body).includes(messageOf.get(runId)!)).length;
    const ending = (base: string, runId: string, ms = 120_000) => waitForStatus(client(base, { key }), runId, ended, ms).catch(logsOnFailure);
    const succeeded = async (base: string, runId: string) => {
      const done = await ending(base, runId);
      assert.equal(done.status, 'success', `run ${runId}: ${JSON.stringify(done.error ?? done)}`);
      assert.deepEqual(done.result?.output, { echo: messageOf.get(runId) });
    };
    const placements = async (ids: string[]) => {
      const { rows } = await db.query<{ id: string; worker_id: string | null; status: string; started_at: Date | null; finished_at: Date | null; code: string | null }>(
        `SELECT id, worker_id, status, started_at, finished_at, error->>'code' AS code FROM runs WHERE id = ANY($1::text[])`, [ids]);
      return new Map(rows.map((r) => [r.id, { worker: r.worker_id, status: r.status, startedAt: r.started_at, finishedAt: r.finished_at, code: r.code }]));
    };

    // the first runs, one through each replica (one database, one engine)
    const firsts = [await launch(a), await launch(b)];
    await succeeded(a, firsts[0]);
    await succeeded(b, firsts[1]);
    // how often one run asks the model: a run executed twice would ask more
    const askedPerRun = asked(firsts[0]);
    assert.ok(askedPerRun >= 1, 'a run asks the scripted model');
    assert.equal(asked(firsts[1]), askedPerRun);
    lap('two first runs done');
    // each worker's endpoint, on the host's address, serves only calls Restate signed
    for (const port of [9080, 9081]) {
      assert.equal(await http2Status(`http://${gateway}:${port}`, 'GET', '/discover', { accept: 'application/vnd.restate.endpointmanifest.v1+json' }), 401);
    }
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

    // The fleet: two workers, each at its own endpoint; the run workflow is served by one of them
    // (the workflow home, as the engine's admin API shows); the other is the one killed below.
    const workers = await until('both workers in the fleet', 60_000, async () => {
      const { rows } = await db.query<{ id: string; endpoint_url: string }>(
        `SELECT id, endpoint_url FROM workers WHERE heartbeat_at > now() - make_interval(secs => $1)`, [LOSS_WINDOW_MS / 1000]);
      return rows.length === 2 ? rows : null;
    });
    const admin = `http://${prefix}.4:9070`;
    const service = (await (await fetch(`${admin}/services/run`)).json()) as { deployment_id: string };
    const homeUri = ((await (await fetch(`${admin}/deployments/${service.deployment_id}`)).json()) as { uri: string }).uri;
    const replicaAt = (url: string) => Number(new URL(url).port) - 9079;
    const home = workers.find((w) => replicaAt(w.endpoint_url) === replicaAt(homeUri));
    assert.ok(home, `the workflow home ${homeUri} is a worker of the fleet: ${JSON.stringify(workers)}`);
    const victim = workers.find((w) => w !== home)!;
    const containerOf = async (replica: number) => {
      const [c] = await docker.listContainers({ all: true, filters: { label: [`com.docker.compose.project=${project}`, 'com.docker.compose.service=platform-worker', `com.docker.compose.container-number=${replica}`] } });
      assert.ok(c, `platform-worker replica ${replica}`);
      return c.Id;
    };
    const homeReplica = replicaAt(home.endpoint_url);
    const victimReplica = replicaAt(victim.endpoint_url);
    const homeContainer = await containerOf(homeReplica);
    const victimContainer = await containerOf(victimReplica);
    lap(`a file shared by the replicas; the workflow home is worker ${home.id} (replica ${homeReplica}), the other ${victim.id} (replica ${victimReplica})`);

    // 20 runs in flight (the model holds every answer): they spread over both workers. The worker
    // that is not the home is killed once it has started runs and has runs placed on it not yet
    // started; once the runs it had started have ended, restate-1 (first in every platform process's
    // list of addresses) is killed too, with the other runs still in flight (held, or booting again).
    model.setHold(true);
    const fleet: string[] = [];
    for (let i = 0; i < FLEET_RUNS; i++) fleet.push(await launch(i % 2 ? b : a));
    lap(`${FLEET_RUNS} runs launched`);
    const ready = (held: Awaited<ReturnType<typeof placements>>) => {
      const onVictim = [...held.values()].filter((p) => p.worker === victim.id);
      return onVictim.some((p) => p.status === 'running') && onVictim.some((p) => p.status === 'pending');
    };
    await until('runs started and runs not started on the worker to be killed', 90_000, async () => {
      const held = await placements(fleet);
      if (ready(held)) return true;
      // all its runs started already: one more launch is placed on it or the home, not started yet
      const onVictim = [...held.values()].filter((p) => p.worker === victim.id);
      if (onVictim.length > 0 && onVictim.every((p) => p.status === 'running') && [...held.values()].every((p) => p.worker) && fleet.length < FLEET_RUNS + 8) fleet.push(await launch(a));
      return false;
    }).catch(logsOnFailure);
    await docker.getContainer(victimContainer).kill();
    const killedAt = Date.now();
    // the runs as the kill left them: a first event the worker relayed just before it died may still
    // be on its way to the database (a busy machine takes seconds); nothing comes from the worker's
    // sandboxes after (its relays died), and once a run is booted elsewhere the sink refuses them
    await new Promise((r) => setTimeout(r, 8_000));
    const atKill = await placements(fleet);
    lap(`worker ${victim.id} killed`);
    const spread = new Map<string, number>();
    for (const id of fleet.slice(0, FLEET_RUNS)) spread.set(String(atKill.get(id)?.worker), (spread.get(String(atKill.get(id)?.worker)) ?? 0) + 1);
    assert.ok((spread.get(home.id) ?? 0) >= 3 && (spread.get(victim.id) ?? 0) >= 3, `the runs spread over both workers: ${JSON.stringify([...spread])}`);
    // the runs the lost worker had started end first (sandbox_lost, asserted below)
    const startedThere = [...atKill].filter(([, p]) => p.worker === victim.id && p.status === 'running').map(([id]) => id);
    await until('the runs started on the lost worker ended', 4 * LOSS_WINDOW_MS, async () => [...(await placements(startedThere)).values()].every((p) => ended(p.status)))
      .catch(logsOnFailure);
    lap('the runs it had started ended; killing restate-1');
    assert.ok([...(await placements(fleet)).values()].some((p) => !ended(p.status)), 'runs are in flight');
    await dc('kill', 'restate-1');
    const [killedNode] = (await dc('ps', '-q', 'restate-1')).stdout.trim().split('\n');
    assert.equal((await docker.getContainer(killedNode).inspect()).State.Running, false, 'restate-1 is down');
    // the held answers go now: the other runs end
    model.setHold(false);
    for (const id of fleet) await ending(a, id);
    lap('the runs in flight ended');
    const now = await placements(fleet);
    let lost = 0;
    let rebooted = 0;
    for (const id of fleet) {
      const before = atKill.get(id)!;
      const after = now.get(id)!;
      if (before.worker === victim.id && before.status === 'running') {
        lost++;
        assert.equal(after.status, 'failed', `run ${id} (started on the lost worker)`);
        assert.equal(after.code, 'sandbox_lost', `run ${id}`);
        const tookMs = after.finishedAt!.getTime() - killedAt;
        assert.ok(tookMs < 2 * LOSS_WINDOW_MS, `run ${id} ended ${tookMs} ms after the kill (bound ${2 * LOSS_WINDOW_MS} ms)`);
      } else {
        if (before.worker === victim.id) {
          rebooted++;
          assert.equal(after.worker, home.id, `run ${id} (not started on the lost worker) is booted on the other`);
          assert.equal(after.status, 'success', `run ${id} (not started on the lost worker, started ${after.startedAt?.toISOString()}, ${after.startedAt ? after.startedAt.getTime() - killedAt : '-'} ms after the kill) succeeds on the other: ${after.code}`);
        }
        await succeeded(a, id);
        // a run that was never on the lost worker asked the model as often as one run does: it ran once
        if (before.worker !== victim.id) assert.equal(asked(id), askedPerRun, `run ${id} asked the model ${asked(id)} times`);
      }
    }
    assert.ok(lost >= 1 && rebooted >= 1, `lost ${lost}, booted elsewhere ${rebooted}`);
    // each ended once: the workflow's own ending is the run's, or it found the run's ending already recorded
    const ingress = `http://${prefix}.6:8080`;
    for (const id of fleet) {
      type Result = { ending: { status: string; error?: { code: string } }; finalized: boolean };
      const result = await until<Result>(`the workflow result of ${id}`, 30_000, async () => {
        const res = await fetch(`${ingress}/restate/workflow/run/${id}/output`).catch(() => null);
        if (res?.ok) return (await res.json()) as Result;
        // an engine that does not serve a workflow's output this way: the workflow's own result handler
        if (res && res.status !== 470 && res.status !== 404) {
          return fetch(`${ingress}/run/${id}/result`, { method: 'POST' }).then((r) => (r.ok ? (r.json() as Promise<Result>) : null), () => null);
        }
        return null;
      });
      const row = now.get(id)!;
      assert.ok(row.finishedAt, `run ${id} has finished_at`);
      if (result.finalized) {
        assert.equal(row.status, result.ending.status, `run ${id}`);
        assert.equal(row.code ?? undefined, result.ending.error?.code, `run ${id}`);
      }
    }
    lap(`checked: ${lost} lost with the worker, ${rebooted} booted again on the other`);

    // A run launched now (restate-1 and the worker still gone) succeeds on the remaining worker, across
    // its restart: its pair of containers outlives the worker (the docker backend), the next adopts it.
    model.setHold(true);
    const next = await launch(b);
    await waitForStatus(api, next, (s) => s === 'running', 60_000).catch(logsOnFailure);
    await until('the run asking the model', 30_000, async () => asked(next) > 0);
    assert.equal((await placements([next])).get(next)?.worker, home.id);
    const pair = (await sandboxesOf(docker, workDirs, [next])).filter((p) => !p.kind.startsWith('network'));
    assert.equal(pair.length, 2, `the run's sidecar and agent containers: ${JSON.stringify(pair)}`);
    lap('restarting the remaining worker');
    await docker.getContainer(homeContainer).restart();
    const sincePair = (await sandboxesOf(docker, workDirs, [next])).filter((p) => !p.kind.startsWith('network'));
    assert.deepEqual(sincePair.map((p) => [p.kind, p.state]).sort(), pair.map((p) => [p.kind, 'running']).sort(), 'the same pair runs on');
    model.setHold(false);
    await succeeded(a, next);
    const logs = (await dc('logs', 'platform-worker')).stdout;
    assert.match(logs, new RegExp(`docker sandboxes adopted.*${pair[0].sandboxId}`));
    lap('the run across the restart ended');

    // the finished runs' containers and networks on the remaining worker are removed (by their
    // workflows, else the reaper); the lost worker's stay until it comes back or down -v
    const homeRuns = runIds.filter((id) => atKill.get(id)?.worker !== victim.id);
    for (let i = 0; (await sandboxesOf(docker, [workDirOf(homeReplica)], homeRuns)).length > 0; i++) {
      if (i > 150) assert.deepEqual(await sandboxesOf(docker, [workDirOf(homeReplica)], homeRuns), [], 'the sandboxes of the finished runs are gone');
      await new Promise((r) => setTimeout(r, 200));
    }
    lap('their sandboxes removed');

    // taken down with its data while a run goes on: its sandbox goes too, with its firewall rules,
    // and the lost worker's sandboxes with its data directory
    model.setHold(true);
    const last = await launch(a);
    await waitForStatus(api, last, (s) => s === 'running', 60_000).catch(logsOnFailure);
    const left = await sandboxesOf(docker, workDirs, [last]);
    assert.ok(left.length >= 2, JSON.stringify(left));
    const bridge = names(left[0].sandboxId).bridge;
    assert.match(firewallRules(), new RegExp(bridge));
    const lostSandboxes = await sandboxesOf(docker, [workDirOf(victimReplica)], fleet);
    assert.ok(lostSandboxes.length > 0, 'the lost worker left its sandboxes');
    // every sandbox of either worker (the runs', and the warm pools' pairs no run claimed) goes down with them
    const everySandbox = new Set<string>();
    for (const workDir of workDirs) {
      const owned = ownedBy(workDir);
      for (const c of await docker.listContainers({ all: true, filters: { label: [LABEL_SANDBOX] } })) {
        if (await owned(c.Labels[LABEL_SANDBOX])) everySandbox.add(c.Labels[LABEL_SANDBOX]);
      }
    }
    assert.ok(everySandbox.size >= 3, `sandboxes before down: ${[...everySandbox]}`);
    await composeDown();
    model.setHold(false);
    lap('down -v');
    assert.deepEqual(await sandboxesOf(docker, workDirs, runIds), []);
    for (const sandboxId of everySandbox) {
      const filters = { label: [`${LABEL_SANDBOX}=${sandboxId}`] };
      assert.deepEqual(await docker.listContainers({ all: true, filters }), [], `the containers of ${sandboxId}`);
      assert.deepEqual(await docker.listNetworks({ filters }), [], `the run network of ${sandboxId}`);
    }
    assert.doesNotMatch(firewallRules(), new RegExp(bridge));
    assert.equal(fs.existsSync(workerData), false, 'the workers\' data directories are removed');
    assert.equal((await docker.listContainers({ all: true, filters: { label: [`com.docker.compose.project=${project}`] } })).length, 0);
  });
});

test('the compose deployment is tested here when CI requires it', () => {
  if (DOCKER_REQUIRED) assert.equal(unavailable, null);
  else if (unavailable) assert.match(unavailable, /docker|compose/);
});
