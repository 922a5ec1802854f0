// HTTP/1.1 to the agent's sidecar, straight on node:net: a request is one write, an answer's head
// is read from the socket's bytes and its body handed on as it arrives (Content-Length, chunked,
// or until the sidecar closes), and a socket whose exchange ended cleanly is kept for the next
// request. node:http does the same work for about twice the CPU per request, and loading it is
// part of every run's cost (it cannot be written into the runtime's startup snapshot); a run makes
// a dozen or so requests, all to the sidecar, which is node's own HTTP server.
// The sidecar is the platform's side of the sandbox: nothing here is an isolation boundary.
import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';

/** where the sidecar listens: its unix socket, or a TCP host and port */
export type SidecarTarget = { socketPath: string } | { host: string; port: number };

export interface SidecarRequest {
  method: string;
  /** path and query, already percent-encoded (a URL's) */
  path: string;
  /** names and values already valid (fetch-headers.ts checks them) */
  headers: Array<[string, string]>;
  body: Buffer | undefined;
}

export interface SidecarAnswer {
  status: number;
  statusText: string;
  /** names and values in turn, as they came */
  rawHeaders: string[];
  /** null when the answer has none (HEAD, 204, 304) */
  body: Readable | null;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');
/** node's own ceiling on an answer's head */
const MAX_HEAD_BYTES = 16 * 1024;

/** node's errors for a connection that ends early: before the answer, and during its body */
function hangUp(): Error {
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
}
function cutOff(): Error {
  return Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
}
function malformed(what: string): Error {
  return Object.assign(new Error(`the sidecar's answer is malformed: ${what}`), { code: 'HPE_INVALID' });
}

/**
 * An answer's body. Like node's own (IncomingMessage), a body that fails while no one listens
 * does not throw its error at the process: the error stays on the stream, for its reader.
 */
class AnswerBody extends Readable {
  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    callback(this.listenerCount('error') === 0 ? null : err);
  }
}

type Framing = { kind: 'none' } | { kind: 'length'; left: number } | { kind: 'chunked' } | { kind: 'close' };

/** How the answer's body is delimited (RFC 9112 section 6.3). */
function framingOf(method: string, status: number, headers: Map<string, string>): Framing {
  if (method === 'HEAD' || status === 204 || status === 304) return { kind: 'none' };
  const coding = headers.get('transfer-encoding');
  if (coding !== undefined) {
    if (coding.split(',').at(-1)!.trim().toLowerCase() === 'chunked') return { kind: 'chunked' };
    return { kind: 'close' };
  }
  const length = headers.get('content-length');
  if (length !== undefined) {
    // repeated values must agree ("5, 5")
    const values = new Set(length.split(',').map((v) => v.trim()));
    const [only] = values;
    if (values.size !== 1 || !/^\d+$/.test(only)) throw malformed('Content-Length');
    return { kind: 'length', left: Number(only) };
  }
  return { kind: 'close' };
}

/** One socket's exchanges, one at a time. */
class Exchange {
  private buffered: Buffer = Buffer.alloc(0);
  private onBytes: (() => void) | undefined;
  /** err: the socket's error; none when the sidecar closed the connection */
  private onEnd: ((err?: Error) => void) | undefined;
  ended = false;

  constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
      this.onBytes?.();
    });
    const end = (err?: Error) => {
      if (this.ended) return;
      this.ended = true;
      this.onEnd?.(err);
    };
    socket.on('error', end);
    socket.on('end', () => end());
    socket.on('close', () => end());
  }

  /** idle, nothing unasked-for received, the connection open: fit for the next request */
  get reusable(): boolean {
    return !this.ended && !this.socket.destroyed && this.buffered.length === 0;
  }

  /** Sends the request and resolves with the answer's head; the body follows on the answer's stream. */
  send(request: SidecarRequest, keep: (exchange: Exchange) => void): Promise<SidecarAnswer> {
    return new Promise((resolve, reject) => {
      let head = `${request.method} ${request.path} HTTP/1.1\r\n`;
      for (const [name, value] of request.headers) head += `${name}: ${value}\r\n`;
      head += 'connection: keep-alive\r\n\r\n';
      const bytes = Buffer.from(head, 'latin1');
      this.socket.ref();
      this.socket.resume();
      this.socket.write(request.body ? Buffer.concat([bytes, request.body]) : bytes);
      this.onEnd = (err) => reject(err ?? hangUp());
      this.onBytes = () => {
        try {
          const parsed = this.readHead(request.method);
          if (parsed) resolve(this.answer(parsed, keep));
        } catch (err) {
          this.onBytes = undefined;
          this.onEnd = undefined;
          this.socket.destroy();
          reject(err);
        }
      };
      this.onBytes();
    });
  }

  /** the answer's head once all of it is here (informational 1xx heads passed over), else undefined */
  private readHead(method: string): Head | undefined {
    for (;;) {
      const end = this.buffered.indexOf(HEAD_END);
      if (end < 0) {
        if (this.buffered.length > MAX_HEAD_BYTES) throw malformed('the head is too large');
        return undefined;
      }
      const lines = this.buffered.subarray(0, end).toString('latin1').split('\r\n');
      this.buffered = this.buffered.subarray(end + HEAD_END.length);
      const status = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(lines[0]);
      if (!status) throw malformed('the status line');
      const code = Number(status[2]);
      const rawHeaders: string[] = [];
      const headers = new Map<string, string>();
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        if (colon <= 0 || line[0] === ' ' || line[0] === '\t') throw malformed('a header line');
        const name = line.slice(0, colon);
        const value = line.slice(colon + 1).trim();
        rawHeaders.push(name, value);
        const key = name.toLowerCase();
        headers.set(key, headers.has(key) ? `${headers.get(key)}, ${value}` : value);
      }
      if (code >= 100 && code < 200) {
        if (code === 101) throw malformed('an upgrade the runtime never asked for');
        continue;
      }
      const connection = (headers.get('connection') ?? '').toLowerCase();
      const close = status[1] === '0' ? !/\bkeep-alive\b/.test(connection) : /\bclose\b/.test(connection);
      return { status: code, statusText: status[3] ?? '', rawHeaders, framing: framingOf(method, code, headers), close };
    }
  }

  /** The answer, its body fed from the socket; the socket is kept once the body has all arrived. */
  private answer(head: Head, keep: (exchange: Exchange) => void): SidecarAnswer {
    const { framing } = head;
    const finish = () => {
      this.onBytes = undefined;
      this.onEnd = undefined;
      // a sidecar that closes, or sent bytes past the answer: the socket is not used again
      if (!head.close && framing.kind !== 'close' && this.reusable) keep(this);
      else this.socket.destroy();
    };
    if (framing.kind === 'none') {
      finish();
      return { status: head.status, statusText: head.statusText, rawHeaders: head.rawHeaders, body: null };
    }
    let feeding = true;
    const body = new AnswerBody({
      read: () => {
        if (feeding) this.socket.resume();
      },
    });
    const push = (bytes: Buffer) => {
      if (bytes.length > 0 && !body.push(bytes)) this.socket.pause();
    };
    const done = () => {
      feeding = false;
      finish();
      body.push(null);
    };
    const fail = (err: Error) => {
      feeding = false;
      this.onBytes = undefined;
      this.onEnd = undefined;
      this.socket.destroy();
      body.destroy(err);
    };
    // a body its reader drops (destroys) before its end ends the socket's use
    body.on('close', () => {
      if (feeding) fail(cutOff());
    });
    this.onEnd = (err) => {
      if (framing.kind === 'close' && !err) done();
      else fail(cutOff());
    };
    let chunkLeft = -1; // chunked: bytes left of the current chunk; 0 at its closing CRLF; -1 before a size line
    let trailers = false;
    this.onBytes = () => {
      try {
        if (framing.kind === 'close') {
          push(this.buffered);
          this.buffered = Buffer.alloc(0);
          return;
        }
        if (framing.kind === 'length') {
          const take = Math.min(framing.left, this.buffered.length);
          push(this.buffered.subarray(0, take));
          this.buffered = this.buffered.subarray(take);
          framing.left -= take;
          if (framing.left === 0) done();
          return;
        }
        for (;;) {
          if (chunkLeft > 0) {
            const take = Math.min(chunkLeft, this.buffered.length);
            if (take === 0) return;
            push(this.buffered.subarray(0, take));
            this.buffered = this.buffered.subarray(take);
            chunkLeft -= take;
            continue;
          }
          const lineEnd = this.buffered.indexOf(CRLF);
          if (lineEnd < 0) {
            if (this.buffered.length > MAX_HEAD_BYTES) throw malformed('a chunk line is too long');
            return;
          }
          const line = this.buffered.subarray(0, lineEnd).toString('latin1');
          this.buffered = this.buffered.subarray(lineEnd + CRLF.length);
          if (trailers) {
            if (line === '') return done();
          } else if (chunkLeft === 0) {
            if (line !== '') throw malformed('a chunk is longer than its size');
            chunkLeft = -1;
          } else {
            const size = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/.exec(line);
            if (!size) throw malformed('a chunk size');
            chunkLeft = parseInt(size[1], 16);
            if (chunkLeft === 0) trailers = true;
          }
        }
      } catch (err) {
        fail(err as Error);
      }
    };
    this.onBytes();
    return { status: head.status, statusText: head.statusText, rawHeaders: head.rawHeaders, body };
  }
}

interface Head {
  status: number;
  statusText: string;
  rawHeaders: string[];
  framing: Framing;
  /** the sidecar closes the connection after this answer */
  close: boolean;
}

/** The runtime's requests to its sidecar, over sockets kept between requests. */
export class SidecarHttp {
  private readonly idle: Exchange[] = [];

  constructor(private readonly target: SidecarTarget) {}

  /**
   * Sends one request. Rejects with the socket's error when the sidecar cannot be reached or
   * drops the connection before answering; an aborted signal ends the request's socket (its
   * body's reading fails), and the promise rejects with the signal's reason.
   */
  async request(request: SidecarRequest, signal?: AbortSignal): Promise<SidecarAnswer> {
    signal?.throwIfAborted();
    let exchange = this.idle.pop();
    while (exchange && !exchange.reusable) {
      exchange.socket.destroy();
      exchange = this.idle.pop();
    }
    if (!exchange) {
      const socket = 'socketPath' in this.target ? connect({ path: this.target.socketPath }) : connect({ host: this.target.host, port: this.target.port });
      socket.setNoDelay(true);
      exchange = new Exchange(socket);
    }
    const using = exchange;
    const abort = () => using.socket.destroy(signal!.reason instanceof Error ? signal!.reason : new Error(String(signal!.reason)));
    signal?.addEventListener('abort', abort, { once: true });
    const keep = (done: Exchange) => {
      signal?.removeEventListener('abort', abort);
      // an idle socket does not hold the process open, as node's agent's do not
      done.socket.unref();
      this.idle.push(done);
    };
    try {
      const answer = await using.send(request, keep);
      answer.body?.once('close', () => signal?.removeEventListener('abort', abort));
      return answer;
    } catch (err) {
      signal?.removeEventListener('abort', abort);
      throw err;
    }
  }
}
