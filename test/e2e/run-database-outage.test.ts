// A database that stalls for 20 s fails no healthy run: neither runs whose agents hand over their
// results while it is stalled, nor runs in the middle of their work, nor runs still booting (their
// boot deadline does not count the stall). A sandbox lost before its first event ends its run
// sandbox_lost at the next check, and runs waiting to start when the platform is killed all run
// after its restart. The platform reaches PostgreSQL through a pausable proxy, sandboxes post their
// events through another (INTERNAL_API_URL); the model sits behind a gate that holds a chosen turn.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { client } from '../support/http.ts';
import { startPausableProxy, type PausableProxy } from '../support/pausable-proxy.ts';
import { namedPort, startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';

const RUNS = 6;
const OUTAGE_MS = 20_000;
// Short, so that the booting runs' stall below outlasts it (the default is 60 s).
const BOOT_SECONDS = 10;
const BOOT_OUTAGE_MS = 15_000;
const ECHO = '/api/agents/@fixtures/agent-echo/run';
// what the scripted model has the agent report through its output tool

/** Which turn of the scripted conversation a request is: the echo agent logs, outputs, then says done. */
function turnOf(body: any): 'first' | 'after log' | 'after output' {
  const called = new Set<string>();
  for (const m of body?.messages ?? []) for (const c of m?.tool_calls ?? []) called.add(String(c?.function?.name ?? ''));
  if ([...called].some((n) => n.endsWith('output'))) return 'after output';
  return [...called].some((n) => n.endsWith('log')) ? 'after log' : 'first';
}

/** The model provider as the platform sees it: the scripted model, with one turn held until released. */
interface ModelGate {
  url: string;
  holdTurn: ReturnType<typeof turnOf> | null;
  held(): number;
  release(): void;
  close(): Promise<void>;
}

async function startModelGate(upstream: FakeModel): Promise<ModelGate> {
  const target = new URL(upstream.url);
  let waiting: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const send = () => {
        const out = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        });
        out.on('error', () => res.destroy());
        out.end(raw);
      };
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8') || 'null');
      } catch {
        body = null;
      }
      if (gate.holdTurn && req.method === 'POST' && turnOf(body) === gate.holdTurn) waiting.push(send);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const gate: ModelGate = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    holdTurn: null,
    held: () => waiting.length,
    release() {
      gate.holdTurn = null;
      const go = waiting;
      waiting = [];
      for (const send of go) send();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return gate;
}

let fake: FakeModel;
let gate: ModelGate;
let db: TestDatabase;
let proxy: PausableProxy;
/** between the sandboxes and the platform's runner routes: holding it holds their events */
let events: PausableProxy;
let platform: PlatformProcess;
let api: ReturnType<typeof client>;

before(async () => {
  fake = await startFakeModel();
  gate = await startModelGate(fake);
  db = await freshDatabase();
  const direct = new URL(db.url);
  proxy = await startPausableProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  const proxied = new URL(db.url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  const port = await namedPort();
  events = await startPausableProxy({ host: '127.0.0.1', port });
  // A 2 s heartbeat: the 20 s outage spans ten of them, three times the allowed silence.
  platform = await startPlatformProcess({
    db: { ...db, url: proxied.toString() },
    env: {
      PORT: String(port), INTERNAL_API_URL: `http://127.0.0.1:${events.port}`,
      RUN_HEARTBEAT_SECONDS: '2', RUN_BOOT_SECONDS: String(BOOT_SECONDS), SANDBOX_WARM_POOL: '0', EGRESS_ALLOW_INTERNAL_HOSTS: new URL(gate.url).host,
    },
  });
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  const org = await anOrg(pool);
  const { key } = await aKey(pool, { ...org, userId: org.ownerId });
  await pool.end();
  api = client(platform.url, { key });
  await importFixture(platform.url, key, 'agent-echo');
  await aDefaultModel(platform.url, key, gate.url, 'fake');
});

after(async () => {
  proxy?.resume();
  events?.resume();
  await platform?.stop();
  await proxy?.close();
  await events?.close();
  await db?.drop();
  await gate?.close();
  await fake?.close();
});

async function until(what: string, ok: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function launch(tag: string, count = RUNS): Promise<Array<{ id: string; message: string }>> {
  const runs = [];
  for (let i = 0; i < count; i++) {
    const message = `${tag} ${i}`;
    const res = await api.post(ECHO, { input: { message } });
    assert.equal(res.status, 201, res.text);
    runs.push({ id: res.body.id as string, message });
  }
  return runs;
}

async function endings(runs: Array<{ id: string; message: string }>): Promise<Array<{ status: string; code?: string; output: unknown }>> {
  const ended = [];
  for (const run of runs) {
    let body: any;
    await until(`run ${run.id} to end`, async () => {
      const res = await api.get(`/api/runs/${run.id}?wait=20`).catch(() => null);
      body = res?.body;
      return res?.status === 200 && !['pending', 'running'].includes(body.status);
    }, 120_000);
    ended.push({ status: body.status, code: body.error?.code, output: body.result?.output });
  }
  return ended;
}

/** The platform's agent runtime processes still running. */
function agentProcesses(): number {
  return childProcesses('agent-runtime').length;
}

/** The pids of the platform's child processes whose command line has `pattern`. */
function childProcesses(pattern: string): number[] {
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(platform.proc.pid)], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(pattern)).map((line) => Number(line.trim().split(/\s+/)[0]));
}

async function statusOf(id: string): Promise<string> {
  return (await api.get(`/api/runs/${id}`)).body.status;
}

async function outage(): Promise<void> {
  proxy.pause();
  await new Promise((r) => setTimeout(r, OUTAGE_MS));
  proxy.resume();
}

describe('runs under a database outage', () => {
  test('runs whose agents finish while the database is stalled end success with their output', async () => {
    gate.holdTurn = 'after output';
    const runs = await launch('finishing');
    // every agent has set its output and waits for its last model turn
    // (a loaded machine may boot a sandbox again, leaving an earlier agent's held turn behind: count
    // the live agents too)
    await until('every agent at its last turn', () => gate.held() >= RUNS && agentProcesses() === RUNS, 90_000);
    proxy.pause();
    // the agents hand their results to their sidecars and exit while nothing can be recorded
    const pausedAt = Date.now();
    gate.release();
    await until('every agent to exit', () => agentProcesses() === 0, OUTAGE_MS);
    await new Promise((r) => setTimeout(r, OUTAGE_MS - (Date.now() - pausedAt)));
    proxy.resume();

    const ended = await endings(runs);
    assert.deepEqual(ended, runs.map((r) => ({ status: 'success', code: undefined, output: { echo: r.message } })));
  });

  test('runs in the middle of their work while the database is stalled end success with their output', async () => {
    gate.holdTurn = 'after log';
    const runs = await launch('working');
    await until('every agent in the middle of its work', () => gate.held() === RUNS, 90_000);
    await outage();
    gate.release();

    const ended = await endings(runs);
    assert.deepEqual(ended, runs.map((r) => ({ status: 'success', code: undefined, output: { echo: r.message } })));
  });
});

describe('runs booting under faults', () => {
  test('runs booting while the database is stalled for longer than their boot deadline end success', async () => {
    await until('no sandbox left from earlier runs', () => childProcesses('agent-runtime').length === 0, 30_000);
    // the first events wait at the held events proxy; once one sandbox has posted its own, that
    // run's boot deadline runs, and the database stalls for longer than it
    events.pause();
    const before = events.activity;
    let runs: Array<{ id: string; message: string }>;
    try {
      runs = await launch('booting', 3);
      await until('a sandbox to post its first event', () => events.activity > before, 60_000);
      for (const run of runs) assert.equal(await statusOf(run.id), 'pending');
      proxy.pause();
    } finally {
      events.resume();
    }
    // the first events reach the platform, which cannot record them for longer than the boot deadline
    await new Promise((r) => setTimeout(r, BOOT_OUTAGE_MS));
    proxy.resume();

    const ended = await endings(runs);
    assert.deepEqual(ended, runs.map((r) => ({ status: 'success', code: undefined, output: { echo: r.message } })));
  });

  test('a sandbox killed before its first event is recorded ends the run sandbox_lost at the next check, not at the boot deadline', async () => {
    await until('no sandbox left from earlier runs', () => childProcesses('agent-runtime').length === 0, 30_000);
    events.pause();
    const before = events.activity;
    let run: { id: string };
    let killedAt: number;
    try {
      [run] = await launch('lost', 1);
      // the agent may have handed its result over and exited: the sidecar host holds the run's session
      await until('the sandbox to post its first event', () => childProcesses('dist/sidecar.cjs').length === 1 && events.activity > before, 60_000);
      assert.equal(await statusOf(run.id), 'pending');
      // the sandbox: its agent, and the sidecar host serving its session (the only run on it)
      for (const pid of [...childProcesses('dist/sidecar.cjs'), ...childProcesses('agent-runtime')]) process.kill(pid, 'SIGKILL');
      killedAt = Date.now();
      // the first event dies with its sandbox, never recorded
      await until('the run to end', async () => !['pending', 'running'].includes(await statusOf(run.id)), 60_000);
    } finally {
      events.resume();
    }
    const ended = (await api.get(`/api/runs/${run.id}`)).body;
    assert.equal(ended.status, 'failed');
    assert.equal(ended.error.code, 'sandbox_lost', JSON.stringify(ended.error));
    // a liveness tick is two 2 s heartbeats: well before the boot deadline
    assert.ok(Date.now() - killedAt < BOOT_SECONDS * 1000, `ended ${Date.now() - killedAt} ms after the kill`);
  });

  test('runs waiting to start when the platform is killed with SIGKILL all run after its restart, booted again', async () => {
    await until('no sandbox left from earlier runs', () => childProcesses('agent-runtime').length === 0, 30_000);
    // one sandbox at least is assigned and has posted its first event (held: the run has not started),
    // others are still being started, when the platform dies
    events.pause();
    const before = events.activity;
    let runs: Array<{ id: string; message: string }>;
    try {
      runs = await launch('restarted', 2);
      await until('a sandbox to post its first event', () => events.activity > before, 60_000);
      for (const run of runs) assert.equal(await statusOf(run.id), 'pending');
      await platform.kill('SIGKILL');
    } finally {
      // what the dead sandboxes posted finds no platform to take it
      events.resume();
    }
    await new Promise((r) => setTimeout(r, 3_000));
    await platform.restart();

    const ended = await endings(runs);
    assert.deepEqual(ended, runs.map((r) => ({ status: 'success', code: undefined, output: { echo: r.message } })));
  });
});
