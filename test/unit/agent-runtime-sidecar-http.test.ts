// The runtime's HTTP/1.1 client on node:net (agent-runtime/sidecar-http.ts), seen through the
// sidecar fetch: each way an answer's body may be framed, sockets kept between requests and
// dropped when they cannot be kept, and answers it refuses. A raw TCP server writes the answers
// byte for byte, so the framings node's own server never picks are covered too.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { sidecarFetch } from '../../agent-runtime/sidecar-fetch.ts';

/** path -> the raw answer's bytes (a function may write them in steps, or close) */
const answers: Record<string, string | ((socket: Socket) => void)> = {
  '/length': 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Dup: a\r\nx-dup: b\r\n\r\nhello',
  '/chunked': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n',
  '/continue': 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok',
  '/closes': 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbye',
  '/until-close': (socket) => {
    socket.write('HTTP/1.1 200 OK\r\n\r\nall of ');
    setTimeout(() => socket.end('it'), 20);
  },
  '/old': 'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nv0',
  '/empty': 'HTTP/1.1 204 No Content\r\n\r\n',
  '/garbled': 'HTTP/1.1 two hundred\r\n\r\n',
  '/bad-length': 'HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello',
  '/bad-chunk': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n',
  '/hang-up': (socket) => socket.destroy(),
  '/cut-chunked': (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel');
    setTimeout(() => socket.destroy(), 20);
  },
  '/slow-stream': (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nfirst\n\r\n');
  },
};

let server: Server;
let base: string;
/** each request as the server read it: the socket it came on, its head, its body */
const seen: Array<{ socket: number; head: string; body: string }> = [];
let sockets = 0;
const open = new Set<Socket>();

before(async () => {
  server = createServer((socket) => {
    const id = ++sockets;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    let buffered = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.slice(0, end);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const body = buffered.slice(end + 4, end + 4 + length);
        buffered = buffered.slice(end + 4 + length);
        seen.push({ socket: id, head, body });
        const path = head.split(' ')[1];
        const answer = answers[path];
        if (typeof answer === 'function') answer(socket);
        else socket.write(answer ?? 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  // the client keeps its sockets for later requests: the server ends them
  for (const socket of open) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test('the request is one HTTP/1.1 message: the method, the path and query, host first, the token, the body and its length', async () => {
  seen.length = 0;
  const res = await sidecarFetch('tok')(`${base}/length?x=1&y=%20`, { method: 'post', headers: { 'X-Mine': 'v', 'content-type': 'application/json' }, body: '{"a":"é"}' });
  await res.text();
  const [{ head, body }] = seen;
  const port = new URL(base).port;
  assert.equal(head, [
    'POST /length?x=1&y=%20 HTTP/1.1', `host: 127.0.0.1:${port}`, 'authorization: Bearer tok', 'content-type: application/json', 'x-mine: v', 'content-length: 10', 'connection: keep-alive',
  ].join('\r\n'));
  assert.equal(Buffer.from(body, 'latin1').toString('utf8'), '{"a":"é"}');
  seen.length = 0;
  await (await sidecarFetch('tok')(`${base}/length`, { method: 'POST' })).text();
  assert.match(seen[0].head, /\r\ncontent-length: 0\r\n/, 'an empty POST says its length, as node does');
});

test('bodies framed by length, by chunks (extensions and trailers passed over) and by the connection\'s end', async () => {
  const fetchToSidecar = sidecarFetch('tok');
  const length = await fetchToSidecar(`${base}/length`);
  assert.deepEqual([length.status, length.headers.get('x-dup'), await length.text()], [200, 'a, b', 'hello']);
  assert.equal(await (await fetchToSidecar(`${base}/chunked`)).text(), 'hello, world');
  assert.equal(await (await fetchToSidecar(`${base}/until-close`)).text(), 'all of it');
  const created = await fetchToSidecar(`${base}/continue`);
  assert.deepEqual([created.status, created.statusText, await created.text()], [201, 'Created', 'ok'], 'an informational answer is passed over');
  assert.equal(await (await fetchToSidecar(`${base}/old`)).text(), 'v0');
  const empty = await fetchToSidecar(`${base}/empty`);
  assert.deepEqual([empty.status, empty.body], [204, null]);
});

test('a socket is kept after a whole answer; one the sidecar closes, or one whose body was dropped, is not', async () => {
  const fetchToSidecar = sidecarFetch('tok');
  seen.length = 0;
  await (await fetchToSidecar(`${base}/length`)).text();
  await (await fetchToSidecar(`${base}/chunked`)).text();
  await (await fetchToSidecar(`${base}/length`)).text();
  assert.equal(new Set(seen.map((s) => s.socket)).size, 1, 'three requests, one socket');
  seen.length = 0;
  await (await fetchToSidecar(`${base}/closes`)).text();
  await (await fetchToSidecar(`${base}/old`)).text();
  await (await fetchToSidecar(`${base}/length`)).text();
  assert.equal(new Set(seen.map((s) => s.socket)).size, 3, 'a closing answer and an HTTP/1.0 one end their sockets');
  seen.length = 0;
  const streaming = await fetchToSidecar(`${base}/slow-stream`);
  const reader = streaming.body!.getReader();
  assert.equal(new TextDecoder().decode((await reader.read()).value), 'first\n');
  await reader.cancel();
  assert.equal(await (await fetchToSidecar(`${base}/length`)).text(), 'hello');
  assert.notEqual(seen[0].socket, seen[1].socket, 'the dropped stream\'s socket was not reused');
});

test('answers it cannot read, and connections that end early, fail as fetch fails', async () => {
  const fetchToSidecar = sidecarFetch('tok');
  for (const path of ['/garbled', '/bad-length', '/hang-up']) {
    const err = await fetchToSidecar(`${base}${path}`).catch((e: unknown) => e);
    assert.ok(err instanceof TypeError && err.message === 'fetch failed', `${path}: ${String(err)}`);
  }
  const badChunk = await fetchToSidecar(`${base}/bad-chunk`);
  await assert.rejects(badChunk.text(), /chunk size/);
  const cut = await fetchToSidecar(`${base}/cut-chunked`);
  await assert.rejects(cut.text(), (err: NodeJS.ErrnoException) => err.code === 'ECONNRESET');
  // and the client goes on with fresh sockets
  assert.equal(await (await fetchToSidecar(`${base}/length`)).text(), 'hello');
});

test('a signal aborted while the body streams ends its reading and the socket', async () => {
  const controller = new AbortController();
  const res = await sidecarFetch('tok')(`${base}/slow-stream`, { signal: controller.signal });
  const reader = res.body!.getReader();
  await reader.read();
  controller.abort(new Error('enough'));
  await assert.rejects(reader.read());
});
