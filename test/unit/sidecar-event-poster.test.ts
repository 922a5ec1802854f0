// The sidecar's event delivery through a platform that cannot record: heartbeats are given up
// soon (the next one says the same), every other event is kept, and the run's end is announced
// to the sandbox's parent when it is taken in and when it cannot be delivered.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventPoster } from '../../sidecar/event-poster.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startEventReceiver, waitUntil, type EventReceiver } from '../integration/sidecar-run-harness.ts';

const quiet = () => undefined;

describe('sidecar event poster', () => {
  const receivers: EventReceiver[] = [];
  after(async () => {
    await Promise.all(receivers.map((r) => r.close()));
  });

  async function aPlatform(answer: (type: string) => number) {
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret, { answer: (event) => answer(event.type) });
    receivers.push(receiver);
    return { secret, receiver, eventsUrl: `${receiver.url}/internal/runs/run_poster/events` };
  }

  test('closed while it gathers a batch (the run\'s session ended): nothing is posted and nothing throws', async () => {
    const platform = await aPlatform(() => 202);
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      const poster = new EventPoster({ ...platform, batchWindowMs: 150, startWindowMs: 150, warn: quiet });
      poster.emit('log', { level: 'info', message: 'queued, then dropped with the session' });
      await new Promise((r) => setTimeout(r, 30));
      poster.close();
      await new Promise((r) => setTimeout(r, 400));
      assert.deepEqual(platform.receiver.deliveries, []);
      assert.deepEqual(rejections, []);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  test('a heartbeat is given up after its own short budget while the events after it are kept', async () => {
    let recording = false;
    const platform = await aPlatform(() => (recording ? 202 : 503));
    const poster = new EventPoster({ ...platform, heartbeatBudgetMs: 300, retryBudgetMs: 20_000, batchWindowMs: 0, warn: quiet });

    poster.emit('heartbeat', {});
    await waitUntil(() => platform.receiver.deliveries.some((d) => d.event?.type === 'heartbeat'), 10_000);
    poster.emit('log', { level: 'info', message: 'kept' });
    await waitUntil(() => platform.receiver.deliveries.some((d) => d.event?.type === 'log'), 10_000);
    recording = true;
    await platform.receiver.waitFor((events) => events.some((e) => e.type === 'log'), 20_000);

    assert.deepEqual(platform.receiver.events.map((e) => [e.sequence, e.type]), [[2, 'log']]);
    assert.ok(platform.receiver.deliveries.every((d) => d.events!.length === 1), 'the log waited for the heartbeat in flight');
    assert.ok(platform.receiver.deliveries.some((d) => d.event?.type === 'heartbeat' && d.status === 503));
  });

  test('the run\'s end is announced once when taken in, and again when it cannot be delivered', async () => {
    const platform = await aPlatform((type) => (type === 'completed' ? 503 : 202));
    const calls: string[] = [];
    const poster = new EventPoster({
      ...platform,
      retryBudgetMs: 500,
      warn: quiet,
      onEnd: () => calls.push('end held'),
      onEndUndelivered: () => calls.push('end undelivered'),
    });

    poster.emit('log', { level: 'info', message: 'before the end' });
    await platform.receiver.waitFor((events) => events.length === 1, 10_000);
    assert.deepEqual(calls, []);
    poster.emit('completed', { text: 'done' });
    assert.deepEqual(calls, ['end held']);
    poster.emit('failed', { code: 'late', message: 'a second end is refused' });
    await waitUntil(() => calls.length === 2, 10_000);

    assert.deepEqual(calls, ['end held', 'end undelivered']);
    assert.deepEqual(platform.receiver.events.map((e) => e.type), ['log']);
  });

  test('events ready together go in one signed post, numbered in order; a lone event goes as itself', async () => {
    const platform = await aPlatform(() => 202);
    const poster = new EventPoster({ ...platform, batchWindowMs: 50, startWindowMs: 50, warn: quiet });

    poster.emit('started', {});
    poster.emit('log', { level: 'info', message: 'one' });
    poster.emit('metric', { model: 'm', prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cost_usd: 0 });
    await platform.receiver.waitFor((events) => events.length === 3, 10_000);
    poster.emit('log', { level: 'info', message: 'alone' });
    await platform.receiver.waitFor((events) => events.length === 4, 10_000);

    assert.deepEqual(platform.receiver.deliveries.map((d) => d.events!.map((e) => [e.sequence, e.type])), [
      [[1, 'started'], [2, 'log'], [3, 'metric']],
      [[4, 'log']],
    ]);
    assert.equal(new Set(platform.receiver.deliveries.map((d) => d.webhookId)).size, 2);
  });

  test('the run\'s end does not wait out the batch window: a short run\'s start, output and end go in one post', async () => {
    const platform = await aPlatform(() => 202);
    const poster = new EventPoster({ ...platform, batchWindowMs: 60_000, startWindowMs: 60_000, warn: quiet });

    poster.emit('started', {});
    poster.emit('output', { output: { answer: 42 } });
    poster.emit('completed', {});
    await platform.receiver.waitFor((events) => events.length === 3, 10_000);

    assert.deepEqual(platform.receiver.deliveries.map((d) => d.events!.map((e) => e.type)), [['started', 'output', 'completed']]);
  });

  test('a refused batch is retried whole, with the same message id and bytes', async () => {
    let refuse = true;
    const platform = await aPlatform(() => (refuse ? 503 : 202));
    const poster = new EventPoster({ ...platform, batchWindowMs: 0, warn: quiet });

    poster.emit('log', { level: 'info', message: 'a' });
    poster.emit('log', { level: 'info', message: 'b' });
    await waitUntil(() => platform.receiver.deliveries.length >= 1, 10_000);
    refuse = false;
    await platform.receiver.waitFor((events) => events.length === 2, 10_000);

    const [first, ...rest] = platform.receiver.deliveries;
    assert.deepEqual(first.events!.map((e) => e.sequence), [1, 2]);
    assert.ok(rest.length >= 1);
    for (const d of rest) {
      assert.equal(d.webhookId, first.webhookId);
      assert.deepEqual(d.events, first.events);
    }
  });

  test('the start waits its window for the end; a flush sends it at once and resolves once it was posted', async () => {
    const platform = await aPlatform(() => 202);
    const poster = new EventPoster({ ...platform, startWindowMs: 60_000, warn: quiet });

    poster.emit('started', {});
    poster.emit('log', { level: 'info', message: 'asking for approval' });
    await poster.flush();
    assert.deepEqual(platform.receiver.events.map((e) => e.type), ['started', 'log']);
    await poster.flush();
    poster.emit('completed', {});
    await platform.receiver.waitFor((events) => events.length === 3, 10_000);
    assert.deepEqual(platform.receiver.deliveries.map((d) => d.events!.map((e) => e.type)), [['started', 'log'], ['completed']]);
  });
});
