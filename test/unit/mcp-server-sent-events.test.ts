// Reading an event stream as a streamable HTTP server may send it: events split anywhere across
// chunks, any line ending, comments, multi-line data.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readServerSentEvents, type ServerSentEvent } from '../../lib/mcp/server-sent-events.ts';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
}

async function eventsOf(chunks: string[]): Promise<ServerSentEvent[]> {
  const events: ServerSentEvent[] = [];
  for await (const e of readServerSentEvents(streamOf(chunks))) events.push(e);
  return events;
}

test('events are read whatever the chunking and line endings', async () => {
  const text = ': keep-alive\nevent: message\nid: 7\ndata: {"a":1}\n\ndata: first\r\ndata: second\r\n\r\nevent: other\rdata: x\r\r';
  const expected = [
    { event: 'message', data: '{"a":1}', id: '7' },
    { event: 'message', data: 'first\nsecond', id: '7' },
    { event: 'other', data: 'x', id: '7' },
  ];
  assert.deepEqual(await eventsOf([text]), expected);
  // one character at a time: a CRLF split between chunks is still one line end
  assert.deepEqual(await eventsOf([...text]), expected);
  // and split into pairs, so every CR lands at a chunk's end at least once
  assert.deepEqual(await eventsOf(text.match(/[\s\S]{1,2}/g) ?? []), expected);
});

test('events without data are skipped, a multi-byte character split across chunks survives, a cut-off event is dropped', async () => {
  const bytes = new TextEncoder().encode('id: 1\n\ndata: café\n\ndata: cut');
  const split = bytes.indexOf(0xc3) + 1; // inside the two bytes of é
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes.slice(0, split));
      controller.enqueue(bytes.slice(split));
      controller.close();
    },
  });
  const events: ServerSentEvent[] = [];
  for await (const e of readServerSentEvents(stream)) events.push(e);
  assert.deepEqual(events, [{ event: 'message', data: 'café', id: '1' }]);
});

test('leaving early cancels the stream', async () => {
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('data: one\n\n'));
    },
    cancel() {
      cancelled = true;
    },
  });
  for await (const e of readServerSentEvents(stream)) {
    assert.equal(e.data, 'one');
    break;
  }
  assert.equal(cancelled, true);
});
