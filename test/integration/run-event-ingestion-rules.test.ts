// What ingestion makes of each event a runner posts, one rule at a time: the body's shape, how a
// log or a usage report is normalized before it is stored, how the ending is judged against the
// run's output schema, and what the caller is told to refresh. Events are signed with the run's
// own secret and handed to the ingestion service as the sink route hands them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { ingestRunEvent, type IngestDeps } from '../../api/services/runs/events.ts';
import type { RunWorkflowClient } from '../../workflows/run-client.ts';
import { aKey } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';

let world: RunWorld;
let deps: IngestDeps;
/** launches are rate-limited per key: this file launches more runs than one key may in a minute */
const launchers: Array<ReturnType<typeof client>> = [];
let launches = 0;

before(async () => {
  world = await aRunWorld();
  deps = { pool: world.app.deps.database.pool, secrets: world.app.deps.secrets };
  for (let i = 0; i < 3; i++) {
    const { key } = await aKey(deps.pool, { ...world.org, userId: world.org.ownerId });
    launchers.push(client(world.app.url, { key }));
  }
});

const launcher = () => launchers[launches++ % launchers.length];
after(() => world.close());

interface Run { id: string; secret: string; spaceId: string; sequence: number }

async function opened(res: { status: number; text: string; body: any }): Promise<Run> {
  assert.equal(res.status, 201, res.text);
  const { rows } = await deps.pool.query('SELECT event_secret, space_id FROM runs WHERE id = $1', [res.body.id]);
  return { id: res.body.id, secret: deps.secrets.open(rows[0].event_secret), spaceId: rows[0].space_id, sequence: 0 };
}

/** A run of the echo agent (output schema: {echo: string}, required). */
async function echoRun(): Promise<Run> {
  return opened(await launcher().post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'hi' } }));
}

/** An inline run with this output schema, or none. */
async function inlineRun(schema?: object): Promise<Run> {
  const manifest = {
    name: '@inline/rules', version: '1.0.0', type: 'agent', schema_version: '0.3',
    ...(schema ? { output: { schema }, runtime_tools: ['output'] } : {}),
  };
  return opened(await launcher().post('/api/runs/inline', { manifest, prompt: 'Do the thing.' }));
}

function send(run: Run, event: Record<string, unknown>) {
  const raw = JSON.stringify({ sequence: ++run.sequence, ...event });
  return ingestRunEvent(deps, run.id, signedRunEventHeaders(run.secret, raw), Buffer.from(raw));
}

/** One signed message carrying these events as a batch, numbered on from the run's last. */
function sendBatch(run: Run, events: Array<Record<string, unknown>>) {
  const raw = JSON.stringify({ events: events.map((e) => ({ sequence: ++run.sequence, ...e })) });
  return ingestRunEvent(deps, run.id, signedRunEventHeaders(run.secret, raw), Buffer.from(raw));
}

function sendRaw(run: Run, raw: string) {
  return ingestRunEvent(deps, run.id, signedRunEventHeaders(run.secret, raw), Buffer.from(raw));
}

async function row(run: Run) {
  const { rows } = await deps.pool.query('SELECT status, output, error, prompt_tokens, completion_tokens, cost_usd FROM runs WHERE id = $1', [run.id]);
  return rows[0];
}

async function logs(run: Run) {
  const { rows } = await deps.pool.query('SELECT level, message, data FROM run_logs WHERE run_id = $1 ORDER BY sequence', [run.id]);
  return rows;
}

async function usage(run: Run) {
  const { rows } = await deps.pool.query('SELECT model, prompt_tokens, completion_tokens, cost_usd::float8 AS cost_usd FROM run_usage WHERE run_id = $1 ORDER BY sequence', [run.id]);
  return rows;
}

function invalid(detail: RegExp) {
  return (err: any) => {
    assert.equal(err.code, 'invalid_request');
    assert.match(err.detail, detail);
    return true;
  };
}

describe('the body of an event', () => {
  test('a body that is not JSON, or JSON without an integer sequence from 1 and a type, is refused', async () => {
    const run = await echoRun();
    await assert.rejects(() => sendRaw(run, '{"sequence": 1,'), invalid(/^The event body is not valid JSON\.$/));
    const shape = invalid(/^An event needs an integer sequence \(from 1\) and a type\.$/);
    for (const raw of ['null', '[]', '"started"', '{"sequence":0,"type":"log"}', '{"sequence":1.5,"type":"log"}', '{"sequence":"1","type":"log"}', '{"sequence":1}', '{"sequence":1,"type":7}']) {
      await assert.rejects(() => sendRaw(run, raw), shape, raw);
    }
    // sequence 1 with a type is an event
    assert.deepEqual(await sendRaw(run, '{"sequence":1,"type":"heartbeat"}'), {});
  });
});

describe('a batch of events in one message', () => {
  test('a batch is 1 to 500 events with increasing sequences, an ending only last; else nothing of it is recorded', async () => {
    const run = await echoRun();
    const many = (n: number) => JSON.stringify({ events: Array.from({ length: n }, (_, i) => ({ sequence: i + 1, type: 'heartbeat' })) });
    const size = invalid(/^A batch carries from 1 to 500 events\.$/);
    for (const raw of ['{"events":[]}', '{"events":{}}', '{"events":null}', many(501)]) await assert.rejects(() => sendRaw(run, raw), size, raw.slice(0, 40));
    await assert.rejects(() => sendRaw(run, '{"events":[{"sequence":1,"type":"log"},{"sequence":0,"type":"log"}]}'), invalid(/^An event needs an integer sequence/));
    const order = invalid(/^A batch's events are in increasing sequence order\.$/);
    await assert.rejects(() => sendRaw(run, '{"events":[{"sequence":2,"type":"log"},{"sequence":1,"type":"log"}]}'), order);
    await assert.rejects(() => sendRaw(run, '{"events":[{"sequence":2,"type":"log"},{"sequence":2,"type":"log"}]}'), order);
    await assert.rejects(
      () => sendRaw(run, '{"events":[{"sequence":1,"type":"completed"},{"sequence":2,"type":"log"}]}'),
      invalid(/^The run's end \(completed or failed\) can only be a batch's last event\.$/),
    );
    assert.deepEqual(await logs(run), []);
    assert.equal((await row(run)).status, 'pending');
    assert.deepEqual(await sendRaw(run, many(500)), {});
  });

  test('a batch is recorded in order with its own sequences, and the caller hears its logs and usage in that order', async () => {
    const run = await echoRun();
    const answer = await sendBatch(run, [
      { type: 'started', data: {} },
      { type: 'log', data: { level: 'info', message: 'first' } },
      { type: 'metric', data: { model: 'm', prompt_tokens: 3, completion_tokens: 4, cost_usd: 0.5 } },
      { type: 'log', data: { level: 'warn', message: 'second' } },
      { type: 'heartbeat' },
    ]);
    assert.deepEqual(answer, {
      changedSpaceId: run.spaceId,
      recorded: [
        { spaceId: run.spaceId, type: 'log', sequence: 2, data: { level: 'info', message: 'first' } },
        { spaceId: run.spaceId, type: 'metric', sequence: 3, data: { model: 'm', prompt_tokens: 3, completion_tokens: 4, cost_usd: 0.5 } },
        { spaceId: run.spaceId, type: 'log', sequence: 4, data: { level: 'warn', message: 'second' } },
      ],
    });
    const { rows } = await deps.pool.query('SELECT sequence, message FROM run_logs WHERE run_id = $1 ORDER BY sequence', [run.id]);
    assert.deepEqual(rows.map((r) => [r.sequence, r.message]), [[2, 'first'], [4, 'second']]);
    const r = await deps.pool.query('SELECT status, last_sequence, prompt_tokens, completion_tokens FROM runs WHERE id = $1', [run.id]);
    assert.deepEqual(r.rows[0], { status: 'running', last_sequence: 5, prompt_tokens: 3, completion_tokens: 4 });
    // one more batch carrying the ending: the output in it is what the ending is judged on
    assert.deepEqual(await sendBatch(run, [{ type: 'output', data: { output: { echo: 'batched' } } }, { type: 'completed', data: {} }]), { changedSpaceId: run.spaceId });
    assert.deepEqual([(await row(run)).status, (await row(run)).output], ['success', { echo: 'batched' }]);
  });

  test('a replayed batch is refused whole and records nothing twice', async () => {
    const run = await echoRun();
    const raw = JSON.stringify({ events: [
      { sequence: 1, type: 'log', data: { message: 'a' } },
      { sequence: 2, type: 'metric', data: { model: 'm', prompt_tokens: 1, completion_tokens: 1, cost_usd: 0 } },
    ] });
    const headers = signedRunEventHeaders(run.secret, raw);
    await ingestRunEvent(deps, run.id, headers, Buffer.from(raw));
    await assert.rejects(() => ingestRunEvent(deps, run.id, headers, Buffer.from(raw)), {
      code: 'message_replayed', detail: 'This webhook-id was already accepted for the run.',
    });
    assert.equal((await logs(run)).length, 1);
    assert.equal((await usage(run)).length, 1);
    assert.equal((await row(run)).prompt_tokens, 1);
  });
});

describe('logs and usage as stored', () => {
  test('a log keeps a known level, else info; its message is text of at most 10,000 characters; its data only when given', async () => {
    const run = await echoRun();
    await send(run, { type: 'log', data: { level: 'debug', message: 'a' } });
    await send(run, { type: 'log', data: { level: 'warn', message: 'b', data: { k: 1 } } });
    await send(run, { type: 'log', data: { level: 'error', message: 42 } });
    await send(run, { type: 'log', data: { level: 'loud', message: 'x'.repeat(10_001) } });
    await send(run, { type: 'log' });
    const stored = await logs(run);
    assert.deepEqual(stored.map((l) => [l.level, l.message.length > 20 ? l.message.length : l.message, l.data]), [
      ['debug', 'a', null], ['warn', 'b', { k: 1 }], ['error', '42', null], ['info', 10_000, null], ['info', '', null],
    ]);
  });

  test('usage counts are whole numbers, a missing one 0; a cost that is not a number is 0; run totals add up', async () => {
    const run = await echoRun();
    await send(run, { type: 'metric', data: { model: 'm1', prompt_tokens: 10, completion_tokens: 5, cost_usd: 0.25 } });
    await send(run, { type: 'metric', data: { model: 'm2', prompt_tokens: '7', completion_tokens: 2.9, cost_usd: 'lots' } });
    await send(run, { type: 'metric', data: {} });
    assert.deepEqual(await usage(run), [
      { model: 'm1', prompt_tokens: 10, completion_tokens: 5, cost_usd: 0.25 },
      { model: 'm2', prompt_tokens: 7, completion_tokens: 2, cost_usd: 0 },
      { model: '', prompt_tokens: 0, completion_tokens: 0, cost_usd: 0 },
    ]);
    const totals = await row(run);
    assert.deepEqual([totals.prompt_tokens, totals.completion_tokens, Number(totals.cost_usd)], [17, 7, 0.25]);
  });

  test('the caller hears which space to refresh and what to stream, event kind by kind', async () => {
    const run = await echoRun();
    assert.deepEqual(await send(run, { type: 'started', data: {} }), { changedSpaceId: run.spaceId });
    assert.deepEqual(await send(run, { type: 'log', data: { level: 'info', message: 'hello' } }), {
      recorded: [{ spaceId: run.spaceId, type: 'log', sequence: 2, data: { level: 'info', message: 'hello' } }],
    });
    assert.deepEqual(await send(run, { type: 'metric', data: { model: 'm', prompt_tokens: 1, completion_tokens: 2, cost_usd: 0 } }), {
      changedSpaceId: run.spaceId,
      recorded: [{ spaceId: run.spaceId, type: 'metric', sequence: 3, data: { model: 'm', prompt_tokens: 1, completion_tokens: 2, cost_usd: 0 } }],
    });
    assert.deepEqual(await send(run, { type: 'output', data: { output: { echo: 'x' } } }), {});
    assert.deepEqual(await send(run, { type: 'heartbeat' }), {});
    assert.deepEqual(await send(run, { type: 'completed', data: {} }), { changedSpaceId: run.spaceId });
    assert.equal((await row(run)).status, 'success');
  });

  test('a failed ending asks for a refresh too', async () => {
    const run = await echoRun();
    assert.deepEqual(await send(run, { type: 'failed', data: { code: 'x', message: 'y' } }), { changedSpaceId: run.spaceId });
  });
});

describe('the ending, judged against the output schema', () => {
  test('a failed event keeps its code and message, with defaults when it gives none', async () => {
    const given = await echoRun();
    await send(given, { type: 'failed', data: { code: 'tool_crashed', message: 'The tool crashed.' } });
    assert.deepEqual(await row(given).then((r) => [r.status, r.error.code, r.error.message]), ['failed', 'tool_crashed', 'The tool crashed.']);
    const bare = await echoRun();
    await send(bare, { type: 'failed' });
    assert.deepEqual(await row(bare).then((r) => [r.status, r.error.code, r.error.message]), ['failed', 'agent_error', 'The agent failed.']);
  });

  test('with a schema, a reported output that matches it is the run\'s output', async () => {
    const run = await echoRun();
    await send(run, { type: 'output', data: { output: { echo: 'fine' } } });
    await send(run, { type: 'completed', data: { text: 'ignored' } });
    const r = await row(run);
    assert.deepEqual([r.status, r.output], ['success', { echo: 'fine' }]);
  });

  test('with a schema, no reported output fails the run no_output, whatever text the agent ended with', async () => {
    const run = await echoRun();
    await send(run, { type: 'completed', data: { text: '{"echo":"in text"}' } });
    const r = await row(run);
    assert.deepEqual([r.status, r.error.code, r.error.message], ['failed', 'no_output', 'The agent finished without reporting an output.']);
  });

  test('with a schema, an output reported as nothing is no output', async () => {
    const run = await echoRun();
    await send(run, { type: 'output', data: {} });
    await send(run, { type: 'completed', data: {} });
    assert.equal((await row(run)).error.code, 'no_output');
  });

  test('with a schema, an output that does not match fails the run output_invalid with the field errors', async () => {
    const run = await echoRun();
    await send(run, { type: 'output', data: { output: { echo: 5 } } });
    await send(run, { type: 'completed', data: {} });
    const r = await row(run);
    assert.deepEqual([r.status, r.error.code, r.error.message], ['failed', 'output_invalid', 'The output does not match the output schema.']);
    assert.ok(Array.isArray(r.error.details) && r.error.details.length > 0, JSON.stringify(r.error));
    assert.match(JSON.stringify(r.error.details), /output/);
  });

  test('a stored schema that can no longer be used fails the run output_invalid, saying why', async () => {
    const run = await inlineRun({ type: 'object' });
    // the schema as stored on the run, made unusable (a pattern that does not compile)
    await deps.pool.query(
      `UPDATE runs SET inline_manifest = jsonb_set(inline_manifest, '{output,schema}', $2::jsonb) WHERE id = $1`,
      [run.id, JSON.stringify({ type: 'string', pattern: '(' })],
    );
    await send(run, { type: 'output', data: { output: 'aaaa' } });
    await send(run, { type: 'completed', data: {} });
    const r = await row(run);
    assert.equal(r.status, 'failed');
    assert.equal(r.error.code, 'output_invalid');
    assert.match(r.error.message, /^The output schema cannot be evaluated: .+; the output cannot be checked\.$/);
  });

  test('without a schema, the reported output wins over the final text', async () => {
    const run = await inlineRun();
    await send(run, { type: 'output', data: { output: { any: ['thing'] } } });
    await send(run, { type: 'completed', data: { text: 'final words' } });
    assert.deepEqual((await row(run)).output, { any: ['thing'] });
  });

  test('without a schema or a reported output, the final text is the output; without text, nothing', async () => {
    const text = await inlineRun();
    await send(text, { type: 'completed', data: { text: 'final words' } });
    assert.deepEqual([(await row(text)).status, (await row(text)).output], ['success', 'final words']);
    const notText = await inlineRun();
    await send(notText, { type: 'completed', data: { text: { not: 'text' } } });
    assert.deepEqual([(await row(notText)).status, (await row(notText)).output], ['success', null]);
  });
});

describe('after the ending', () => {
  const closed = { code: 'run_sink_closed', detail: 'The run has ended; stop sending events.' };
  const expired = { code: 'run_sink_expired', detail: 'The run event sink has expired.' };

  test('an event for an ended run is run_sink_closed, whether its secret was kept or not', async () => {
    const run = await echoRun();
    await send(run, { type: 'started', data: {} });
    await send(run, { type: 'failed', data: {} });
    await assert.rejects(() => send(run, { type: 'log', data: { message: 'late' } }), closed);
    const fresh = await echoRun();
    await deps.pool.query(`UPDATE runs SET status = 'cancelled' WHERE id = $1`, [fresh.id]);
    await assert.rejects(() => send(fresh, { type: 'started', data: {} }), closed);
    // ended while its secret was kept (by another path than an event: a cancel)
    const cancelled = await echoRun();
    await send(cancelled, { type: 'started', data: {} });
    await deps.pool.query(`UPDATE runs SET status = 'cancelled' WHERE id = $1`, [cancelled.id]);
    await assert.rejects(() => send(cancelled, { type: 'log', data: { message: 'late' } }), closed);
  });

  test('a run whose sink expired is run_sink_expired on its first event and after its secret was kept', async () => {
    const first = await echoRun();
    await deps.pool.query(`UPDATE runs SET sink_expires_at = now() - interval '1 second' WHERE id = $1`, [first.id]);
    await assert.rejects(() => send(first, { type: 'started', data: {} }), expired);
    const kept = await echoRun();
    await send(kept, { type: 'started', data: {} });
    await deps.pool.query(`UPDATE runs SET sink_expires_at = now() - interval '1 second' WHERE id = $1`, [kept.id]);
    await assert.rejects(() => send(kept, { type: 'log', data: { message: 'late' } }), expired);
  });

  test('an ended or expired run is told so before its event is read, even a malformed one', async () => {
    const ended = await echoRun();
    await deps.pool.query(`UPDATE runs SET status = 'failed' WHERE id = $1`, [ended.id]);
    await assert.rejects(() => sendRaw(ended, '{"no":"sequence"}'), closed);
    const old = await echoRun();
    await deps.pool.query(`UPDATE runs SET sink_expires_at = now() - interval '1 second' WHERE id = $1`, [old.id]);
    await assert.rejects(() => sendRaw(old, '{"no":"sequence"}'), expired);
  });

  test('an unknown run, or one deleted after its secret was kept, is not_found; a replay is message_replayed', async () => {
    const notFound = { code: 'not_found', detail: 'No such run.' };
    const run = await echoRun();
    await assert.rejects(() => ingestRunEvent(deps, 'run_doesnotexist', {}, Buffer.from('{}')), notFound);
    await send(run, { type: 'started', data: {} });
    const raw = JSON.stringify({ sequence: 2, type: 'log', data: { message: 'once' } });
    const headers = signedRunEventHeaders(run.secret, raw);
    await ingestRunEvent(deps, run.id, headers, Buffer.from(raw));
    await assert.rejects(() => ingestRunEvent(deps, run.id, headers, Buffer.from(raw)), {
      code: 'message_replayed', detail: 'This webhook-id was already accepted for the run.',
    });
    await deps.pool.query('DELETE FROM runs WHERE id = $1', [run.id]);
    await assert.rejects(() => send(run, { type: 'log', data: { message: 'gone' } }), notFound);
  });
});

describe("a sandbox's placement", () => {
  /** one signed message from the sandbox of worker `placement` (null: a sink URL without one) */
  const fromWorker = (run: Run, placement: string | null, event: Record<string, unknown>) => {
    const raw = JSON.stringify({ events: [{ sequence: ++run.sequence, ...event }] });
    const headers = signedRunEventHeaders(run.secret, raw);
    return { headers, raw, post: () => ingestRunEvent(deps, run.id, headers, Buffer.from(raw), placement) };
  };
  const moved = { code: 'run_sink_closed', detail: 'The run is placed on another worker now; this sandbox no longer reports for it. Stop sending events.' };

  test("a message from the sandbox of a worker the run is not placed on is run_sink_closed, records nothing and keeps no message id", async () => {
    const run = await echoRun();
    await deps.pool.query(`UPDATE runs SET worker_id = 'w_home' WHERE id = $1`, [run.id]);
    const stale = fromWorker(run, 'w_lost', { type: 'started', data: {} });
    await assert.rejects(stale.post, moved);
    const r = await deps.pool.query('SELECT status, started_at, last_event_at, last_sequence FROM runs WHERE id = $1', [run.id]);
    assert.deepEqual(r.rows[0], { status: 'pending', started_at: null, last_event_at: null, last_sequence: 0 }, 'nothing of it is recorded, liveness included');
    assert.equal((await deps.pool.query('SELECT 1 FROM run_event_ids WHERE run_id = $1', [run.id])).rowCount, 0, 'its message id is not kept');
    // refused before the cached secret path and after it alike
    await send(run, { type: 'log', data: { message: 'secret kept now' } });
    await assert.rejects(fromWorker(run, 'w_lost', { type: 'log', data: { message: 'stale' } }).post, moved);
    // the worker it is placed on is heard; so is a message naming no placement (a remote runner)
    assert.deepEqual(await fromWorker(run, 'w_home', { type: 'started', data: {} }).post(), { changedSpaceId: run.spaceId });
    assert.equal((await row(run)).status, 'running');
    await fromWorker(run, null, { type: 'heartbeat' }).post();
    assert.deepEqual((await logs(run)).map((l) => l.message), ['secret kept now']);
  });

  test('a run moved to another worker between two messages refuses the old sandbox from then on', async () => {
    const run = await echoRun();
    await deps.pool.query(`UPDATE runs SET worker_id = 'w_first' WHERE id = $1`, [run.id]);
    await fromWorker(run, 'w_first', { type: 'heartbeat' }).post();
    await deps.pool.query(`UPDATE runs SET worker_id = 'w_second' WHERE id = $1`, [run.id]);
    await assert.rejects(fromWorker(run, 'w_first', { type: 'started', data: {} }).post, moved);
    assert.equal((await row(run)).status, 'pending');
    await fromWorker(run, 'w_second', { type: 'started', data: {} }).post();
    assert.equal((await row(run)).status, 'running');
  });

  test('a placement that moves while a message is being recorded wins: the message is refused', async () => {
    const run = await echoRun();
    await deps.pool.query(`UPDATE runs SET worker_id = 'w_old' WHERE id = $1`, [run.id]);
    // the move holds the run's row while the old sandbox's message reads its placement
    const mover = await deps.pool.connect();
    try {
      await mover.query('BEGIN');
      await mover.query(`UPDATE runs SET worker_id = 'w_new' WHERE id = $1`, [run.id]);
      const stale = fromWorker(run, 'w_old', { type: 'started', data: {} }).post();
      await new Promise((r) => setTimeout(r, 300));
      await mover.query('COMMIT');
      await assert.rejects(stale, moved);
    } finally {
      mover.release();
    }
    assert.equal((await row(run)).status, 'pending');
    assert.equal((await deps.pool.query('SELECT 1 FROM run_event_ids WHERE run_id = $1', [run.id])).rowCount, 0);
  });
});

describe('what the engine is told', () => {
  /** The engine's side of the workflow client, recording the signals it is given. */
  function recordingEngine(refuse = false) {
    const signals: Array<[string, unknown]> = [];
    const runs = {
      async started(runId: string) {
        signals.push(['started', runId]);
        if (refuse) throw new Error('engine down');
      },
      async terminal(runId: string, payload: unknown) {
        signals.push(['terminal', payload]);
        if (refuse) throw new Error('engine down');
      },
    } as unknown as RunWorkflowClient;
    return { signals, deps: { ...deps, runs } };
  }

  test('started and the judged ending are signalled, nothing else is', async () => {
    const engine = recordingEngine();
    const run = await echoRun();
    const post = (event: Record<string, unknown>) => {
      const raw = JSON.stringify({ sequence: ++run.sequence, ...event });
      return ingestRunEvent(engine.deps, run.id, signedRunEventHeaders(run.secret, raw), Buffer.from(raw));
    };
    await post({ type: 'started', data: {} });
    await post({ type: 'log', data: { message: 'm' } });
    await post({ type: 'metric', data: { model: 'm' } });
    await post({ type: 'heartbeat' });
    await post({ type: 'output', data: { output: { echo: 'done' } } });
    assert.deepEqual(engine.signals, [['started', run.id]]);
    await post({ type: 'completed', data: {} });
    assert.deepEqual(engine.signals, [['started', run.id], ['terminal', { status: 'success', output: { echo: 'done' } }]]);
  });

  test('a batch that carries the ending signals only the ending; one that carries the start without it, the start', async () => {
    const short = recordingEngine();
    const run = await echoRun();
    const post = (events: Array<Record<string, unknown>>) => {
      const raw = JSON.stringify({ events: events.map((e) => ({ sequence: ++run.sequence, ...e })) });
      return ingestRunEvent(short.deps, run.id, signedRunEventHeaders(run.secret, raw), Buffer.from(raw));
    };
    await post([{ type: 'started', data: {} }, { type: 'output', data: { output: { echo: 'quick' } } }, { type: 'completed', data: {} }]);
    assert.deepEqual(short.signals, [['terminal', { status: 'success', output: { echo: 'quick' } }]]);
    assert.equal((await row(run)).status, 'success');

    const long = recordingEngine();
    const other = await echoRun();
    const raw = JSON.stringify({ events: [{ sequence: 1, type: 'started', data: {} }, { sequence: 2, type: 'log', data: { message: 'm' } }] });
    await ingestRunEvent(long.deps, other.id, signedRunEventHeaders(other.secret, raw), Buffer.from(raw));
    assert.deepEqual(long.signals, [['started', other.id]]);
  });

  test('a started signal the engine does not take is answered bad_gateway and forgotten for the retry', async () => {
    const engine = recordingEngine(true);
    const run = await echoRun();
    const raw = JSON.stringify({ sequence: 1, type: 'started', data: {} });
    const headers = signedRunEventHeaders(run.secret, raw);
    const refusal = { code: 'bad_gateway', detail: 'The workflow engine is unreachable; retry the event.' };
    await assert.rejects(() => ingestRunEvent(engine.deps, run.id, headers, Buffer.from(raw)), refusal);
    await assert.rejects(() => ingestRunEvent(engine.deps, run.id, headers, Buffer.from(raw)), refusal);
    assert.deepEqual(engine.signals, [['started', run.id], ['started', run.id]]);
  });

  test('an ending the engine does not take still ends the run, once', async () => {
    const engine = recordingEngine(true);
    const run = await echoRun();
    const raw = JSON.stringify({ sequence: 1, type: 'failed', data: { code: 'c', message: 'm' } });
    assert.deepEqual(await ingestRunEvent(engine.deps, run.id, signedRunEventHeaders(run.secret, raw), Buffer.from(raw)), { changedSpaceId: run.spaceId });
    assert.deepEqual(engine.signals, [['terminal', { status: 'failed', error: { code: 'c', message: 'm' } }]]);
    assert.equal((await row(run)).status, 'failed');
  });
});
