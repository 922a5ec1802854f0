// The agent's checkpoints through a platform that cannot record (its database stalled): the
// sidecar takes each at once, so the agent never waits; the latest is posted when the platform is
// back, an older one still waiting is replaced by it, and the run's end is posted only after it.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CheckpointForwarder, relayCheckpoint } from '../../sidecar/checkpoint-relay.ts';
import { EventPoster } from '../../sidecar/event-poster.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';

interface Seen { path: string; step?: number; type?: string; status: number }

/** A platform answering 503 to everything until `recording`, then 204 (checkpoints) and 202 (events). */
async function aPlatform() {
  const state = { recording: false, seen: [] as Seen[] };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { step?: number; type?: string };
      const status = !state.recording ? 503 : req.url!.endsWith('/checkpoint') ? 204 : 202;
      state.seen.push({ path: req.url!, step: body.step, type: body.type, status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/internal/runs/run_cp`;
  return { state, base, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

/** What the runtime posts: a checkpoint of `step` (the relay checks its shape). */
const checkpointOf = (step: number) => Buffer.from(JSON.stringify({ step, messages: [{ role: 'user', content: `step ${step}` }], files: [], removed: [] }));

/** The relay's answer to the runtime, as a status code. */
function relay(forwarder: CheckpointForwarder | null, raw: Buffer): number {
  let status = 0;
  const res = {
    writeHead(s: number) { status = s; return this; },
    end() { return this; },
  } as unknown as ServerResponse;
  relayCheckpoint(res, raw, forwarder);
  return status;
}

const platforms: Array<{ close(): Promise<void> }> = [];
after(async () => { await Promise.all(platforms.map((p) => p.close())); });

test('a checkpoint is taken at once while the platform cannot record, and the latest is posted once it can', async () => {
  const platform = await aPlatform();
  platforms.push(platform);
  const forwarder = new CheckpointForwarder(`${platform.base}/checkpoint`, newRunEventSecret(), { maxBackoffMs: 50 });
  const t0 = Date.now();
  assert.equal(relay(forwarder, checkpointOf(1)), 204);
  assert.equal(relay(forwarder, checkpointOf(2)), 204);
  assert.ok(Date.now() - t0 < 100, 'the agent did not wait on the platform');
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(platform.state.seen.length > 0 && platform.state.seen.every((s) => s.status === 503), 'posted and refused while stalled');
  platform.state.recording = true;
  await forwarder.settled();
  const kept = platform.state.seen.filter((s) => s.status === 204);
  assert.deepEqual(kept.map((s) => s.step), [2], 'only the latest step is kept: step 1 was replaced while it waited');
  forwarder.close();
});

test('not a checkpoint is 400 and a run without checkpoints 404, neither posted', async () => {
  const platform = await aPlatform();
  platforms.push(platform);
  const forwarder = new CheckpointForwarder(`${platform.base}/checkpoint`, newRunEventSecret());
  assert.equal(relay(forwarder, Buffer.from('{not json')), 400);
  assert.equal(relay(forwarder, Buffer.from(JSON.stringify({ step: 'one' }))), 400);
  assert.equal(relay(null, checkpointOf(1)), 404);
  await forwarder.settled();
  assert.deepEqual(platform.state.seen, []);
});

test("the run's end is posted only after its last checkpoint was kept", async () => {
  const platform = await aPlatform();
  platforms.push(platform);
  const secret = newRunEventSecret();
  const forwarder = new CheckpointForwarder(`${platform.base}/checkpoint`, secret, { maxBackoffMs: 50 });
  const poster = new EventPoster({ eventsUrl: `${platform.base}/events`, secret, maxBackoffMs: 50, warn: () => undefined, beforeEnd: () => forwarder.settled() });
  relay(forwarder, checkpointOf(3));
  poster.emit('failed', { code: 'model_error', message: 'the model failed' });
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(!platform.state.seen.some((s) => s.type === 'failed'), 'the end waits while the checkpoint cannot be recorded');
  platform.state.recording = true;
  const deadline = Date.now() + 10_000;
  while (!platform.state.seen.some((s) => s.type === 'failed' && s.status === 202)) {
    assert.ok(Date.now() < deadline, 'the end was posted');
    await new Promise((r) => setTimeout(r, 20));
  }
  const kept = platform.state.seen.filter((s) => s.status !== 503);
  assert.deepEqual(kept.map((s) => s.step ?? s.type), [3, 'failed']);
  forwarder.close();
});
