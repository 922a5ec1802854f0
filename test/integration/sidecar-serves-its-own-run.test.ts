// A sidecar serves its own run's agent only: every request presents the run's token, over TCP and
// over its unix socket; anyone else who reaches the port gets 401 and nothing is proxied. Its model
// calls connect to the address the egress guard checked, however the name resolves afterwards.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { parseAssignment } from '../../sidecar/assignment.ts';
import { SidecarHttpServer } from '../../sidecar/http-server.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { aSidecarAssignment, aSidecarToken, bearer, REAL_MODEL_KEY, sidecarUrlOf, spawnWarm, startEventReceiver, typesInOrder, waitUntil } from './sidecar-run-harness.ts';

const CHAT = JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'hi' }] });
const MCP_CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'log', arguments: { message: 'intruder' } } });
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

/** One request over a unix socket, answered with its status. */
function overSocket(socketPath: string, path: string, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('a sidecar answers its own run only', () => {
  let model: FakeModel;
  before(async () => {
    model = await startFakeModel();
  });
  after(async () => {
    await model.close();
  });

  test('another party on its TCP port, without the token or with another run\'s, gets 401 and the model is never called', async (t) => {
    const secret = newRunEventSecret();
    const [receiver, otherReceiver] = await Promise.all([startEventReceiver(secret), startEventReceiver(secret)]);
    const [sidecar, other] = await Promise.all([spawnWarm('sidecar/main.ts'), spawnWarm('sidecar/main.ts')]);
    t.after(async () => {
      await Promise.all([sidecar.kill(), other.kill()]);
      await Promise.all([receiver.close(), otherReceiver.close()]);
    });
    const [token, otherToken] = [aSidecarToken(), aSidecarToken()];
    const modelAssignment = { baseUrl: model.url, apiKey: REAL_MODEL_KEY, model: 'fake' };
    sidecar.assign(aSidecarAssignment({ token, eventsUrl: `${receiver.url}/events`, eventSecret: secret, model: modelAssignment, runtimeTools: ['log'] }));
    other.assign(aSidecarAssignment({ token: otherToken, eventsUrl: `${otherReceiver.url}/events`, eventSecret: secret, model: modelAssignment }));
    await Promise.all([receiver.waitFor((events) => events.length >= 1), otherReceiver.waitFor((events) => events.length >= 1)]);
    const url = sidecarUrlOf(sidecar);
    const callsBefore = model.requests.length;

    const strangers: Array<Record<string, string>> = [
      {},
      bearer(otherToken),
      bearer(token.slice(0, -1)),
      bearer(`${token}x`),
      { authorization: token },
      { authorization: `Basic ${Buffer.from(`agent:${token}`).toString('base64')}` },
      { authorization: 'Bearer' },
    ];
    for (const headers of strangers) {
      const attempts = [
        await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: CHAT }),
        await fetch(`${url}/v1/models`, { headers }),
        await fetch(`${url}/mcp`, { method: 'POST', headers: { ...headers, ...MCP_HEADERS }, body: MCP_CALL }),
        await fetch(`${url}/runtime/events`, { method: 'POST', headers, body: JSON.stringify({ type: 'completed', text: 'forged' }) }),
        await fetch(`${url}/v1/chat/completions?token=${token}`, { method: 'POST', headers, body: CHAT }),
      ];
      for (const res of attempts) {
        assert.equal(res.status, 401, JSON.stringify(headers));
        assert.equal(res.headers.get('www-authenticate'), 'Bearer');
        assert.doesNotMatch(await res.text(), /fake|chatcmpl|tools|jsonrpc/);
      }
    }
    assert.equal(model.requests.length, callsBefore, 'the model upstream was never called for a stranger');

    // the run's own agent is served; the events since show nothing a stranger caused
    const own = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: CHAT });
    assert.equal(own.status, 200);
    await own.json();
    assert.equal(model.requests.length, callsBefore + 1);
    assert.equal(model.requests.at(-1)?.authorization, `Bearer ${REAL_MODEL_KEY}`);
    await receiver.waitFor((events) => events.some((e) => e.type === 'metric'));
    assert.deepEqual(typesInOrder(receiver.events), ['started', 'metric'], 'no log and no forged completion came before');
  });

  test('its unix socket asks for the token too', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'sidecar-socket-'));
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret);
    const sidecar = await spawnWarm('sidecar/main.ts');
    t.after(async () => {
      await sidecar.kill();
      await receiver.close();
      await rm(dir, { recursive: true, force: true });
    });
    const socketPath = join(dir, 'sidecar.sock');
    const assignment = aSidecarAssignment({ eventsUrl: `${receiver.url}/events`, eventSecret: secret, model: null, runtimeTools: ['log'] });
    sidecar.assign({ ...assignment, socketPath });
    await receiver.waitFor((events) => events.length >= 1);
    assert.equal(await overSocket(socketPath, '/mcp', MCP_HEADERS, MCP_CALL), 401);
    assert.equal(await overSocket(socketPath, '/mcp', { ...MCP_HEADERS, ...bearer(aSidecarToken()) }, MCP_CALL), 401);
    assert.equal(await overSocket(socketPath, '/mcp', { ...MCP_HEADERS, ...bearer(assignment.token) }, MCP_CALL), 200);
    await receiver.waitFor((events) => events.some((e) => e.type === 'log'));
    assert.deepEqual(typesInOrder(receiver.events), ['started', 'log']);
  });

  test('an assignment without a token (or a guessable one) is refused: the sidecar never serves unauthenticated', async () => {
    const base = { runId: 'run_x', eventsUrl: 'http://127.0.0.1:9/events', eventSecret: newRunEventSecret(), model: null, outputSchema: null, runtimeTools: [], heartbeatSeconds: 5 };
    for (const token of [undefined, '', 'short', 'a'.repeat(42), `${'a'.repeat(43)} `]) {
      assert.throws(() => parseAssignment(JSON.stringify({ ...base, token })), /token must be/, String(token));
    }
    assert.equal(parseAssignment(JSON.stringify({ ...base, token: aSidecarToken() })).egressAllowInternalHosts.length, 0);
    // a bare host in the assignment's allowlist is refused like the setting
    assert.throws(() => parseAssignment(JSON.stringify({ ...base, token: aSidecarToken(), egressAllowInternalHosts: ['127.0.0.1'] })), /host:port/);
    const sidecar = await spawnWarm('sidecar/main.ts');
    sidecar.assign({ ...base, token: undefined });
    assert.equal(await sidecar.exited, 2);
    assert.match(sidecar.stderr(), /token must be/);
  });

  test('a model call connects to the address that was checked, not to a later answer for the same name', async (t) => {
    // two loopback listeners on one port: the checked address and the one a rebinding answer names
    const checked = await startFakeModel();
    const port = Number(new URL(checked.url).port);
    const rebound: string[] = [];
    const elsewhere = createServer((req, res) => {
      rebound.push(req.url ?? '');
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices":[]}');
    });
    await new Promise<void>((resolve) => elsewhere.listen(port, '127.0.0.2', resolve));
    assert.equal((elsewhere.address() as AddressInfo).port, port);
    const lookups: string[] = [];
    const sidecar = new SidecarHttpServer({
      // a rebinding resolver: the first answer passes the check, every later one names the other listener
      resolve: async (host) => {
        lookups.push(host);
        return lookups.length === 1 ? ['127.0.0.1'] : ['127.0.0.2'];
      },
    });
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret);
    const sidecarPort = await sidecar.listen();
    const token = aSidecarToken();
    const events = sidecar.assign(parseAssignment(JSON.stringify(aSidecarAssignment({
      token,
      eventsUrl: `${receiver.url}/events`,
      eventSecret: secret,
      model: { baseUrl: `http://models.rebind.test:${port}/v1`, apiKey: REAL_MODEL_KEY, model: 'fake' },
    }))));
    t.after(async () => {
      events.stopHeartbeat();
      sidecar.server.closeAllConnections();
      await new Promise<void>((resolve) => sidecar.server.close(() => resolve()));
      elsewhere.closeAllConnections();
      await new Promise<void>((resolve) => elsewhere.close(() => resolve()));
      await checked.close();
      await receiver.close();
    });

    const res = await fetch(`http://127.0.0.1:${sidecarPort}/v1/chat/completions`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: CHAT });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { model: string }).model, 'fake');
    assert.equal(checked.requests.length, 1, 'the call reached the checked address');
    assert.deepEqual(rebound, [], 'the later answer was never connected to');
    assert.deepEqual(lookups, ['models.rebind.test'], 'the name was resolved once, for the check');
    await waitUntil(() => receiver.events.some((e) => e.type === 'metric'));
  });

  test('a model provider at one of the platform\'s own endpoints, or at the sidecar\'s own port, is refused although allowlisted', async (t) => {
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret);
    const sidecar = new SidecarHttpServer();
    const sidecarPort = await sidecar.listen();
    const modelPort = Number(new URL(model.url).port);
    const posters: Array<{ stopHeartbeat(): void }> = [];
    t.after(async () => {
      for (const p of posters) p.stopHeartbeat();
      sidecar.server.closeAllConnections();
      await new Promise<void>((resolve) => sidecar.server.close(() => resolve()));
      await receiver.close();
    });
    const token = aSidecarToken();
    // the scripted model stands in for a platform port (say, PostgreSQL's) the operator also allowlisted
    posters.push(sidecar.assign(parseAssignment(JSON.stringify(aSidecarAssignment({
      token,
      eventsUrl: `${receiver.url}/events`,
      eventSecret: secret,
      model: { baseUrl: `http://localhost:${modelPort}/v1`, apiKey: REAL_MODEL_KEY, model: 'fake' },
      egressAllowInternalHosts: [`localhost:${modelPort}`, `127.0.0.1:${sidecarPort}`],
      egressPlatformEndpoints: [{ host: '127.0.0.1', port: modelPort }],
    })))));
    const calls = model.requests.length;
    const res = await fetch(`http://127.0.0.1:${sidecarPort}/v1/chat/completions`, { method: 'POST', headers: bearer(token), body: CHAT });
    assert.equal(res.status, 502);
    assert.equal(((await res.json()) as { error: { type: string } }).error.type, 'upstream_error');
    assert.equal(model.requests.length, calls, 'the platform port heard nothing');
    await receiver.waitFor((events) => events.some((e) => e.type === 'log'));
    assert.match(String((receiver.events.find((e) => e.type === 'log')?.data as { message?: string }).message), /platform's own endpoints/);

    // a sidecar asked to call its own port (allowlisted) does not call itself
    const selfSecret = newRunEventSecret();
    const selfReceiver = await startEventReceiver(selfSecret);
    const looped = new SidecarHttpServer();
    const loopedPort = await looped.listen();
    t.after(async () => {
      looped.server.closeAllConnections();
      await new Promise<void>((resolve) => looped.server.close(() => resolve()));
      await selfReceiver.close();
    });
    const selfToken = aSidecarToken();
    posters.push(looped.assign(parseAssignment(JSON.stringify(aSidecarAssignment({
      token: selfToken,
      eventsUrl: `${selfReceiver.url}/events`,
      eventSecret: selfSecret,
      model: { baseUrl: `http://127.0.0.1:${loopedPort}/v1`, apiKey: REAL_MODEL_KEY, model: 'fake' },
    })))));
    const self = await fetch(`http://127.0.0.1:${loopedPort}/v1/chat/completions`, { method: 'POST', headers: bearer(selfToken), body: CHAT });
    assert.equal(self.status, 502);
    await self.body?.cancel();
    await selfReceiver.waitFor((events) => events.some((e) => e.type === 'log'));
    assert.match(String((selfReceiver.events.find((e) => e.type === 'log')?.data as { message?: string }).message), /platform's own endpoints/);
  });
});
