// The process backend's long-lived sidecar host: two runs served at once by one host process
// cannot reach each other's session (each answers only its own token, on its own port and its own
// socket); a run's session, once closed, is gone from the host with its token; a host that dies
// takes every session with it.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: a plain ESM script without type declarations
import { ensureBundle } from '../../bin/start.mjs';
import { SidecarHost } from '../../activities/sandbox/sidecar-host.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { aSidecarAssignment, aSidecarToken, REPO, startEventReceiver, type EventReceiver } from './sidecar-run-harness.ts';
import { running } from './sandbox-process-harness.ts';

const MODEL_KEY_A = 'sk-host-test-model-key-of-run-a-000000';
const MODEL_KEY_B = 'sk-host-test-model-key-of-run-b-111111';

interface Where {
  port?: number;
  socketPath?: string;
}

/** GET /v1/models on a session (its TCP port or its unix socket), with a bearer token or none. */
function ask(where: Where, token: string | null): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      ...(where.socketPath ? { socketPath: where.socketPath } : { host: '127.0.0.1', port: where.port }),
      path: '/v1/models',
      agent: false,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

interface Run {
  id: string;
  token: string;
  secret: string;
  receiver: EventReceiver;
  port: number;
  socketPath: string;
}

describe('one sidecar host serving two runs at once', () => {
  let model: FakeModel;
  let dir: string;
  let host: SidecarHost;
  const runs: Run[] = [];

  before(async () => {
    await ensureBundle();
    model = await startFakeModel();
    dir = await mkdtemp(join(tmpdir(), 'sidecar-host-'));
    host = await SidecarHost.start({
      command: process.execPath,
      args: [join(REPO, 'dist', 'sidecar.cjs')],
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, SIDECAR_MODE: 'host' },
    });
    for (const [id, key] of [['a', MODEL_KEY_A], ['b', MODEL_KEY_B]] as const) {
      const secret = newRunEventSecret();
      const receiver = await startEventReceiver(secret);
      const token = aSidecarToken();
      const socketPath = join(dir, `${id}.sock`);
      const assignment = aSidecarAssignment({
        runId: `run_host_${id}`,
        eventsUrl: `${receiver.url}/internal/runs/run_host_${id}/events`,
        eventSecret: secret,
        token,
        model: { baseUrl: model.url, apiKey: key, model: `fake-${id}` },
      });
      const port = await host.open(`sbx_${id}`, { ...assignment, socketPath }, 10_000);
      runs.push({ id, token, secret, receiver, port, socketPath });
    }
  });
  after(async () => {
    await host?.terminate();
    for (const run of runs) await run.receiver.close();
    await model?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("each session answers its own token only, on its own port and socket: the other run's token is refused", async () => {
    assert.equal(await host.count(), 2);
    const [a, b] = runs;
    assert.notEqual(a.port, b.port);
    for (const [own, other] of [[a, b], [b, a]]) {
      for (const where of [{ port: own.port }, { socketPath: own.socketPath }]) {
        const served = await ask(where, own.token);
        assert.equal(served.status, 200, JSON.stringify(where));
        // the session's model is its own run's, never the other's
        assert.ok(served.body.includes(`fake-${own.id}`) && !served.body.includes(`fake-${other.id}`), served.body);
        assert.equal((await ask(where, other.token)).status, 401, `${own.id}'s session refuses ${other.id}'s token`);
        assert.equal((await ask(where, null)).status, 401);
      }
    }
    // each run's events reach its own receiver only, signed with its own secret (the receiver checks)
    for (const run of runs) {
      await run.receiver.waitFor((events) => events.some((e) => e.type === 'started'));
      assert.ok(run.receiver.deliveries.every((d) => d.status !== 401 && d.path === `/internal/runs/run_host_${run.id}/events`), JSON.stringify(run.receiver.deliveries));
    }
  });

  test("a closed session is gone from the host: its port and socket refuse, its token is refused, the other run goes on", async () => {
    const [a, b] = runs;
    await host.close(`sbx_${a.id}`);
    assert.equal(host.state(`sbx_${a.id}`), 'gone');
    assert.equal(await host.count(), 1);
    await assert.rejects(ask({ port: a.port }, a.token), /ECONNREFUSED/);
    assert.equal(existsSync(a.socketPath), false, 'the socket file is removed');
    // the remaining session does not take the closed run's token either
    assert.equal((await ask({ port: b.port }, a.token)).status, 401);
    assert.equal((await ask({ socketPath: b.socketPath }, b.token)).status, 200);
    // nothing more is posted for the closed run (its heartbeat and retries stopped with it)
    const posted = a.receiver.deliveries.length;
    await host.close(`sbx_${b.id}`);
    assert.equal(await host.count(), 0);
    assert.equal(a.receiver.deliveries.length, posted);
  });

  test('a session cannot be opened twice, and an invalid assignment is refused naming fields only', async () => {
    const token = aSidecarToken();
    const secret = newRunEventSecret();
    const bad = { runId: 'run_bad', eventsUrl: 'http://127.0.0.1:1/x', eventSecret: secret, token: 'short', model: null, outputSchema: null, runtimeTools: [], heartbeatSeconds: 60 };
    const refused = await host.open('sbx_bad', bad, 10_000).catch((e: Error) => e);
    assert.ok(refused instanceof Error && /token must be/.test(refused.message) && !refused.message.includes(secret), String(refused));
    assert.equal(await host.count(), 0);
    const good = { ...bad, token };
    await host.open('sbx_twice', good, 10_000);
    await assert.rejects(host.open('sbx_twice', good, 10_000), /already open/);
    await host.close('sbx_twice');
    assert.equal(await host.count(), 0);
  });

  test('a host that dies takes every session with it', async () => {
    const secret = newRunEventSecret();
    await host.open('sbx_last', { runId: 'run_last', eventsUrl: 'http://127.0.0.1:1/x', eventSecret: secret, token: aSidecarToken(), model: null, outputSchema: null, runtimeTools: [], heartbeatSeconds: 60 }, 10_000);
    assert.equal(host.state('sbx_last'), 'serving');
    host.killNow();
    await host.exited;
    assert.equal(running(host.pid), false);
    assert.equal(host.state('sbx_last'), 'gone');
  });
});
