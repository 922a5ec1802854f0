// The node:http server under the app: timeouts that fit an API (a request that never finishes
// no longer holds its connection for node's default 300 s) and the HTTP parser's own refusals
// answered as problem documents with a Request-Id instead of a bare status line.
import http from 'node:http';
import type { Socket } from 'node:net';
import { newRequestId } from '../lib/ids.ts';
import { problem, problemBody, type ProblemError } from '../lib/problem.ts';
import type { App } from './app.ts';
import { sendProblem } from './middleware/errors.ts';

/** From the first byte of a request to the end of its headers. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** From the first byte to the end of the body: a body of the default 10 MiB limit at ~175 KB/s. */
export const REQUEST_TIMEOUT_MS = 60_000;
/** An idle kept-alive connection; above the 60 s idle timeout of common load balancers. */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

export interface ServerOptions {
  /** ERROR_TYPE_BASE, for the type of the problems answered here */
  typeBase: string;
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  /** how often node checks connections against the two timeouts above (node's default: 30 s) */
  checkIntervalMs?: number;
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 413: 'Content Too Large', 414: 'URI Too Long', 431: 'Request Header Fields Too Large' };

/** The parser error as the problem it answers. */
export function parserProblem(err: NodeJS.ErrnoException & { rawPacket?: Buffer }): ProblemError {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return problem('invalid_request', { status: 408, detail: 'The request was not received in time.' });
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return problem('payload_too_large', { detail: 'The chunk extensions are over the limit.' });
    case 'HPE_HEADER_OVERFLOW': {
      // node's limit covers the request line too: a request line over half of it is a URL over the limit
      const raw = err.rawPacket;
      const lineEnd = raw ? raw.indexOf(10) : -1;
      if (raw && /^[A-Z]+ /.test(raw.subarray(0, 16).toString('latin1')) && (lineEnd < 0 ? raw.length : lineEnd) > http.maxHeaderSize / 2) {
        return problem('invalid_request', { status: 414, detail: 'The request URL is over the size limit.' });
      }
      return problem('invalid_request', { status: 431, detail: 'The request headers are over the size limit.' });
    }
    default:
      return problem('invalid_request', { detail: `The request is not valid HTTP/1.1 (${err.code ?? 'unreadable'}).` });
  }
}

const LONG_BODY = Symbol('long body');
type LongBodySocket = Socket & { [LONG_BODY]?: boolean };

/**
 * Exempts a request whose handler streams a long body (an upload of up to FILE_MAX_BYTES) from
 * the whole-request timeout: a slow link may take longer than REQUEST_TIMEOUT_MS to send a large
 * file. The body must keep moving instead: a connection idle for `idleMs` is cut.
 */
export function allowLongBody(req: http.IncomingMessage, res: http.ServerResponse, idleMs = REQUEST_TIMEOUT_MS): void {
  const socket = req.socket as LongBodySocket;
  socket[LONG_BODY] = true;
  const onIdle = () => socket.destroy();
  socket.setTimeout(idleMs);
  socket.on('timeout', onIdle);
  res.once('close', () => {
    socket[LONG_BODY] = false;
    socket.setTimeout(0);
    socket.off('timeout', onIdle);
  });
}

function answerClientError(err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket, typeBase: string): void {
  // a streamed upload is judged by its idle time instead (allowLongBody)
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && (socket as LongBodySocket)[LONG_BODY]) return;
  const inFlight = (socket as Socket & { _httpMessage?: http.ServerResponse })._httpMessage;
  // nothing can be said on a closed socket or after a response has started
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const p = parserProblem(err);
  const existing = inFlight?.getHeader('Request-Id');
  const requestId = typeof existing === 'string' ? existing : newRequestId();
  const body = JSON.stringify(problemBody(p, requestId, typeBase));
  const head = [
    `HTTP/1.1 ${p.status} ${REASONS[p.status] ?? 'Bad Request'}`,
    'Content-Type: application/problem+json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `Request-Id: ${requestId}`,
    'Connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`, () => socket.destroy());
}

export function createHttpServer(app: App, opts: ServerOptions): http.Server {
  const server = http.createServer({
    headersTimeout: opts.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
    requestTimeout: opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
    connectionsCheckingInterval: opts.checkIntervalMs ?? 1_000,
    // node's own refusal of a Host-less HTTP/1.1 request is a bare 400: answered below instead
    requireHostHeader: false,
  }, (req, res) => {
    if (req.headers.host === undefined && req.httpVersion === '1.1') {
      const requestId = newRequestId();
      res.setHeader('Request-Id', requestId);
      res.shouldKeepAlive = false;
      sendProblem(res, problem('invalid_request', { param: 'Host', detail: 'An HTTP/1.1 request needs a Host header.' }), requestId, opts.typeBase);
      return;
    }
    app(req, res);
  });
  // an Expect other than 100-continue: node's own answer is a bare 417 with no Request-Id
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const requestId = newRequestId();
    res.setHeader('Request-Id', requestId);
    // the body the client may send anyway is not read: the connection closes after the answer
    res.shouldKeepAlive = false;
    const expect = String(req.headers.expect ?? '').slice(0, 100);
    sendProblem(res, problem('invalid_request', { status: 417, param: 'Expect', detail: `Expect: ${expect} is not supported; only 100-continue is.` }), requestId, opts.typeBase);
  });
  server.keepAliveTimeout = opts.keepAliveTimeoutMs ?? KEEP_ALIVE_TIMEOUT_MS;
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => answerClientError(err, socket, opts.typeBase));
  return server;
}
