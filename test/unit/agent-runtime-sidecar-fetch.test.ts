// The agent's fetch to its sidecar (agent-runtime/sidecar-fetch.ts) sends what node's Request
// would have sent, with the run's token, and answers as node's Response does: the same status,
// headers and body, read whole or as a stream, once. A loopback server plays the sidecar.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sidecarFetch } from '../../agent-runtime/sidecar-fetch.ts';

const TOKEN = 'run-token-for-the-test';

interface Received {
  method: string;
  path: string;
  headers: Array<[string, string]>;
  body: Buffer;
}

let server: Server;
let base: string;
const received: Received[] = [];
/** resolves the stream's second event, once the test has read the first */
let sendSecondEvent: (() => void) | undefined;

function answer(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  switch (req.url) {
    case '/json':
      res.writeHead(200, 'Fine', [['Content-Type', 'application/json; charset=utf-8'], ['X-Multi', 'a'], ['x-multi', 'b'], ['Set-Cookie', 'a=1'], ['Set-Cookie', 'b=2']]);
      res.end(JSON.stringify({ echo: body.toString('utf8') }));
      return;
    case '/bom':
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('h\u00e9llo \ud83d\ude00', 'utf8'), Buffer.from([0xff])]));
      return;
    case '/nothing':
      res.writeHead(204);
      res.end();
      return;
    case '/teapot':
      res.writeHead(418, "I'm a teapot", { 'content-type': 'text/plain' });
      res.end('short and stout');
      return;
    case '/events':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      sendSecondEvent = () => res.end('data: second\n\n');
      return;
    case '/cut':
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
      res.write('only ten b');
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    case '/never':
      return;
    default:
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
  }
}

before(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers: Array<[string, string]> = [];
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i].toLowerCase(), req.rawHeaders[i + 1]]);
      received.push({ method: req.method!, path: req.url!, headers, body });
      answer(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** what the server should receive for (input, init): node's Request's reading of them, the token set */
async function asNodeRequestWouldSend(input: string | URL, init: RequestInit | undefined): Promise<Omit<Received, 'headers'> & { headers: Record<string, string> }> {
  const req = new Request(input, init);
  req.headers.set('authorization', `Bearer ${TOKEN}`);
  const url = new URL(req.url);
  const body = Buffer.from(await req.arrayBuffer());
  const headers: Record<string, string> = { host: url.host };
  req.headers.forEach((value, key) => (headers[key] = value));
  if (req.body) headers['content-length'] = String(body.length);
  return { method: req.method, path: url.pathname + url.search, headers, body };
}

describe('requests', () => {
  const cases: Array<[string, (base: string) => [string | URL, RequestInit | undefined]]> = [
    ['a plain GET', (b) => [`${b}/plain?x=1`, undefined]],
    ['a URL object and a lower-case method', (b) => [new URL(`${b}/plain`), { method: 'delete' }]],
    ['a text body: the content type node adds when none is given', (b) => [`${b}/plain`, { method: 'post', body: 'h\u00e9llo \ud800 lone' }]],
    ['a JSON body with its content type and headers as pairs', (b) => [`${b}/json`, { method: 'POST', body: '{"a":1}', headers: [['Content-Type', 'application/json'], ['X-Twice', 'a'], ['x-twice', 'b']] }]],
    ['bytes (a view into a larger buffer)', (b) => [`${b}/plain`, { method: 'PUT', body: new Uint8Array([1, 2, 3, 250]).subarray(1) }]],
    ['an ArrayBuffer', (b) => [`${b}/plain`, { method: 'patch', body: new Uint8Array([9, 8]).buffer }]],
    ['a DataView', (b) => [`${b}/plain`, { method: 'POST', body: new DataView(new Uint8Array([7, 6, 5]).buffer, 1) }]],
    ['a caller\'s own authorization, replaced by the token', (b) => [`${b}/plain`, { headers: { Authorization: 'Bearer not-the-token', 'x-keep': ' padded ' } }]],
    ['node\'s Headers as the headers', (b) => [`${b}/plain`, { headers: new Headers({ 'x-from-node': '1' }) }]],
    ['a form body (read by node\'s Request)', (b) => [`${b}/plain`, { method: 'POST', body: new URLSearchParams({ a: '1', b: 'two words' }) }]],
    ['an init naming more than the plain fields (read by node\'s Request)', (b) => [`${b}/plain`, { method: 'POST', body: 'x', redirect: 'manual', cache: 'no-store' }]],
  ];
  for (const [name, make] of cases) {
    test(`${name} goes out as node's Request would send it, with the run's token`, async () => {
      const [input, init] = make(base);
      received.length = 0;
      const res = await sidecarFetch(TOKEN)(input, init);
      await res.arrayBuffer();
      const [got] = received;
      const expected = await asNodeRequestWouldSend(input, init);
      // node's http client sends every method upper-cased (patch too)
      assert.equal(got.method, expected.method.toUpperCase());
      assert.equal(got.path, expected.path);
      assert.deepEqual(got.body, expected.body);
      // node's http client adds its connection header; everything else is the request's
      assert.deepEqual(Object.fromEntries(got.headers.filter(([k]) => k !== 'connection')), expected.headers);
    });
  }

  test('a request node\'s Request refuses is refused the same way', async () => {
    const fetchToSidecar = sidecarFetch(TOKEN);
    await assert.rejects(fetchToSidecar(`${base}/plain`, { method: 'GET', body: 'no' }), TypeError);
    await assert.rejects(fetchToSidecar(`${base}/plain`, { method: 'CONNECT' }), TypeError);
    await assert.rejects(fetchToSidecar('/relative', {}), TypeError);
    await assert.rejects(fetchToSidecar(`http://user:pw@127.0.0.1:1/`), TypeError);
    await assert.rejects(fetchToSidecar(`${base}/plain`, { headers: { 'bad name': 'x' } }), TypeError);
  });
});

describe('responses', () => {
  test('status, text, ok, headers and a JSON body as node\'s Response has them', async () => {
    const init = { method: 'POST', body: 'ping' };
    const [mine, node] = await Promise.all([sidecarFetch(TOKEN)(`${base}/json`, init), fetch(`${base}/json`, init)]);
    assert.deepEqual([mine.status, mine.statusText, mine.ok, [...mine.headers].filter(([k]) => k !== 'date')], [node.status, node.statusText, node.ok, [...node.headers].filter(([k]) => k !== 'date')]);
    assert.deepEqual(mine.headers.getSetCookie(), ['a=1', 'b=2']);
    assert.deepEqual(await mine.json(), await node.json());
    assert.equal(mine.url, '');
    assert.equal(mine.redirected, false);
  });

  test('text drops the byte-order mark and replaces what is not UTF-8, as node\'s does; a failed status is not ok', async () => {
    const [mine, node] = await Promise.all([sidecarFetch(TOKEN)(`${base}/bom`), fetch(`${base}/bom`)]);
    assert.equal(await mine.text(), await node.text());
    const teapot = await sidecarFetch(TOKEN)(`${base}/teapot`);
    assert.deepEqual([teapot.status, teapot.statusText, teapot.ok, await teapot.text()], [418, "I'm a teapot", false, 'short and stout']);
  });

  test('a body is read once: a second reading is refused, bodyUsed says so and the body stream is spent', async () => {
    const res = await sidecarFetch(TOKEN)(`${base}/plain`);
    assert.equal(res.bodyUsed, false);
    assert.equal(await res.text(), 'ok');
    assert.equal(res.bodyUsed, true);
    await assert.rejects(res.text(), TypeError);
    await assert.rejects(res.arrayBuffer(), TypeError);
    assert.equal(res.body?.locked, true);
    const streamed = await sidecarFetch(TOKEN)(`${base}/plain`);
    const reader = streamed.body!.getReader();
    await assert.rejects(streamed.json(), TypeError);
    assert.equal(new TextDecoder().decode((await reader.read()).value), 'ok');
    assert.equal(streamed.bodyUsed, true);
  });

  test('no body for a 204 or a HEAD; an empty reading of it', async () => {
    const none = await sidecarFetch(TOKEN)(`${base}/nothing`);
    assert.deepEqual([none.status, none.body, await none.text(), none.bodyUsed], [204, null, '', false]);
    const head = await sidecarFetch(TOKEN)(`${base}/plain`, { method: 'HEAD' });
    assert.deepEqual([head.status, head.body, (await head.arrayBuffer()).byteLength], [200, null, 0]);
  });

  test('bytes, an ArrayBuffer of its own, a blob typed by the content type, a clone read apart', async () => {
    const fetchToSidecar = sidecarFetch(TOKEN);
    const buffer = await (await fetchToSidecar(`${base}/plain`)).arrayBuffer();
    assert.deepEqual([buffer.byteLength, Buffer.from(buffer).toString()], [2, 'ok']);
    const blob = await (await fetchToSidecar(`${base}/json`, { method: 'POST', body: 'b' })).blob();
    assert.deepEqual([blob.type, await blob.text()], ['application/json;charset=utf-8', '{"echo":"b"}']);
    const original = await fetchToSidecar(`${base}/json`, { method: 'POST', body: 'c' });
    const copy = original.clone();
    assert.deepEqual([await copy.json(), await original.json()], [{ echo: 'c' }, { echo: 'c' }]);
    assert.throws(() => original.clone(), TypeError);
  });

  test('an event stream arrives as it is written, not once it ends', async () => {
    const res = await sidecarFetch(TOKEN)(`${base}/events`);
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.equal(new TextDecoder().decode(first.value), 'data: first\n\n');
    sendSecondEvent!();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    assert.equal(rest, 'data: second\n\n');
  });
});

describe('failures', () => {
  test('no one listening: a TypeError "fetch failed", as fetch rejects, its cause the socket error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const err = await sidecarFetch(TOKEN)(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    assert.ok(err instanceof TypeError);
    assert.equal(err.message, 'fetch failed');
    assert.equal((err.cause as NodeJS.ErrnoException).code, 'ECONNREFUSED');
  });

  test('an aborted request rejects with the signal\'s reason, before or while waiting', async () => {
    const early = AbortSignal.abort(new Error('stop early'));
    await assert.rejects(sidecarFetch(TOKEN)(`${base}/never`, { signal: early }), /stop early/);
    const controller = new AbortController();
    const waiting = sidecarFetch(TOKEN)(`${base}/never`, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop waiting')), 20);
    await assert.rejects(waiting, /stop waiting/);
  });

  test('a body cut short fails its reading, whole or streamed', async () => {
    await assert.rejects((await sidecarFetch(TOKEN)(`${base}/cut`)).text(), (err: NodeJS.ErrnoException) => err.code === 'ECONNRESET' || err.name === 'AbortError');
    const streamed = await sidecarFetch(TOKEN)(`${base}/cut`);
    await assert.rejects(new Response(streamed.body).text());
  });
});
