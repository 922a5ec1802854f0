// Reads a text/event-stream body into events, per the WHATWG event-stream format: lines end in
// CR, LF or CRLF; a blank line dispatches; "data" lines accumulate; ":" lines are comments.
// A streamable HTTP server may answer a POST this way, the JSON-RPC response inside one event.

export interface ServerSentEvent {
  /** "message" unless the event names another type */
  event: string;
  data: string;
  id?: string;
}

/** Yields each complete event; an event cut off by the end of the stream is dropped, as browsers do. */
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffered = '';
  // where to look for the next line end: the text before it was searched already
  let scanned = 0;
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffered += done ? decoder.decode() : decoder.decode(value, { stream: true });
      // a lone CR at the end may be the first half of a CRLF: wait for more unless the stream is done
      for (let end = lineEnd(buffered, scanned, done); end >= 0; end = lineEnd(buffered, 0, done)) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(buffered[end] === '\r' && buffered[end + 1] === '\n' ? end + 2 : end + 1);
        scanned = 0;
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n'), id };
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
        else if (field === 'id' && !value.includes('\0')) id = value;
        // "retry" and unknown fields: nothing to do for a one-shot response stream
      }
      if (done) return;
      // a trailing CR stays unscanned: the LF that may follow it is still to come
      scanned = buffered.endsWith('\r') ? buffered.length - 1 : buffered.length;
    }
  } finally {
    // stop the transfer when the consumer leaves early (the awaited response has arrived)
    await reader.cancel().catch(() => undefined);
  }
}

function lineEnd(text: string, from: number, streamDone: boolean): number {
  const lf = text.indexOf('\n', from);
  const cr = text.indexOf('\r', from);
  if (cr < 0 || (lf >= 0 && lf < cr)) return lf;
  return cr + 1 < text.length || streamDone ? cr : -1;
}
