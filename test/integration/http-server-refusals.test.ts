// What the HTTP parser refuses is answered as a problem document with a Request-Id, and a request
// that never finishes is cut off after the API's timeouts instead of node's default 300 s.
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createHttpServer, HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from '../../api/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  closed: boolean;
}

/** Writes bytes on a fresh connection and reads the answer until the server closes it. */
function raw(port: number, bytes: string | Buffer, opts: { holdOpen?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within 20 s; got: ${Buffer.concat(chunks).toString('latin1').slice(0, 300)}`));
    }, 20_000);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = text.slice(0, end < 0 ? text.length : end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const c = line.indexOf(':');
        if (c > 0) headers[line.slice(0, c).toLowerCase()] = line.slice(c + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: end < 0 ? '' : text.slice(end + 4), closed: true });
    });
    socket.write(bytes);
    if (!opts.holdOpen) socket.end();
  });
}

function assertProblem(res: RawAnswer, status: number): void {
  assert.equal(res.status, status, JSON.stringify(res));
  assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/);
  assert.match(res.headers['request-id'] ?? '', /^req_/);
  const body = JSON.parse(res.body);
  assert.equal(body.status, status);
  assert.equal(body.request_id, res.headers['request-id']);
  assert.equal(typeof body.code, 'string');
  assert.equal(typeof body.detail, 'string');
}

describe("the HTTP parser's refusals", () => {
  let app: TestApp;
  let port: number;
  before(async () => {
    app = await startTestApp();
    port = Number(new URL(app.url).port);
  });
  after(() => app.close());

  test('conflicting Content-Length headers: 400', async () => {
    assertProblem(await raw(port, 'POST /api/end-users HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'), 400);
  });

  test('Content-Length beside Transfer-Encoding chunked, and a bad chunk size: 400', async () => {
    assertProblem(await raw(port, 'POST /api/end-users HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'), 400);
    assertProblem(await raw(port, 'POST /api/end-users HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n'), 400);
  });

  test('invalid bytes in the request line or a header: 400', async () => {
    assertProblem(await raw(port, 'GET /api/\x01x HTTP/1.1\r\nHost: a\r\n\r\n'), 400);
    assertProblem(await raw(port, 'GET /health/live HTTP/1.1\r\nHost: a\r\nX-Test: a\x00b\r\n\r\n'), 400);
    assertProblem(await raw(port, 'G\x7fT /health/live HTTP/1.1\r\nHost: a\r\n\r\n'), 400);
  });

  test('headers over the limit: 431; a URL over the limit: 414', async () => {
    assertProblem(await raw(port, `GET /health/live HTTP/1.1\r\nHost: a\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`), 431);
    assertProblem(await raw(port, `GET /health/live?q=${'u'.repeat(20_000)} HTTP/1.1\r\nHost: a\r\n\r\n`), 414);
  });

  test('a client that leaves mid-body is not logged as a server failure', async () => {
    const logged: string[] = [];
    const log = app.deps.log as { error: (msg: string, fields?: unknown) => void };
    const original = log.error;
    log.error = (msg: string, fields?: unknown) => {
      logged.push(`${msg} ${JSON.stringify(fields)}`);
    };
    try {
      const socket = net.connect(port, '127.0.0.1');
      await new Promise<void>((r) => socket.once('connect', () => r()));
      socket.write('POST /api/auth/sign-in/email HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":');
      await new Promise((r) => setTimeout(r, 300));
      socket.destroy();
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      log.error = original;
    }
    assert.deepEqual(logged, []);
  });

  test('an Expect other than 100-continue: 417 as a problem document naming the header, the connection closed', async () => {
    for (const request of [
      'POST /api/end-users HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
      'GET /health/live HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n',
    ]) {
      const res = await raw(port, request, { holdOpen: true });
      assertProblem(res, 417);
      const body = JSON.parse(res.body);
      assert.equal(body.param, 'Expect');
      assert.equal(body.code, 'invalid_request');
      assert.equal(body.instance, `urn:appstrate:request:${res.headers['request-id']}`);
      assert.equal(res.headers.connection, 'close');
    }
    // 100-continue is still node's: the request goes on to the app
    const cont = await raw(port, 'GET /health/live HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n');
    assert.ok(cont.status === 100 || cont.status === 200, JSON.stringify(cont));
  });

  test('an HTTP/1.1 request without Host: 400 naming the header', async () => {
    const res = await raw(port, 'GET /health/live HTTP/1.1\r\n\r\n');
    assertProblem(res, 400);
    assert.equal(JSON.parse(res.body).param, 'Host');
  });
});

describe('timeouts', () => {
  test('the server defaults fit an API: 10 s for headers, 60 s for a whole request', () => {
    const server = createHttpServer(() => {}, { typeBase: 'https://errors.example.test' });
    assert.equal(server.headersTimeout, HEADERS_TIMEOUT_MS);
    assert.equal(server.requestTimeout, REQUEST_TIMEOUT_MS);
    assert.ok(HEADERS_TIMEOUT_MS <= 10_000 && REQUEST_TIMEOUT_MS <= 60_000);
  });

  test('a body that never finishes is answered 408 with a problem and the connection closes', async () => {
    // the app reads the body the way the JSON routes do, so the request is in flight when the timer fires
    const server = createHttpServer((req) => { req.resume(); }, {
      typeBase: 'https://errors.example.test', headersTimeoutMs: 300, requestTimeoutMs: 600, checkIntervalMs: 100,
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (server.address() as AddressInfo).port;
      const started = Date.now();
      const res = await raw(port, 'POST /x HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":', { holdOpen: true });
      assertProblem(res, 408);
      assert.ok(Date.now() - started < 15_000);
      const partial = await raw(port, 'GET /x HTTP/1.1\r\nHost: a\r\nX-Slow: ', { holdOpen: true });
      assertProblem(partial, 408);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
