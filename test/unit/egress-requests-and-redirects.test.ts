// What a guarded request carries, and how redirects are followed: the method, headers and body
// reach the checked target (directly, pinned to the checked address, or through a CONNECT proxy);
// a body-less answer has no body; only a 3xx with a Location moves, at most maxRedirects times; a
// move to another origin drops the caller's headers; 307/308 keep the method and body, the others
// become a GET without one. Two loopback origins and a loopback CONNECT proxy, nothing else.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http, { type IncomingMessage } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { guardedFetch, guardedRequest } from '../../lib/egress.ts';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function origin(name: string) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const u = new URL(req.url ?? '/', 'http://x');
      if (u.pathname === '/move') {
        // /move?code=307&to=<url>: that status, with that Location (none when `to` is absent)
        const to = u.searchParams.get('to');
        res.writeHead(Number(u.searchParams.get('code')), to === null ? {} : { location: to }).end(`moved by ${name}`);
        return;
      }
      if (u.pathname === '/loop') {
        res.writeHead(302, { location: '/loop' }).end();
        return;
      }
      if (u.pathname === '/empty') {
        res.writeHead(204).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ from: name, method: req.method, body }));
    });
  });
  return { server, seen };
}

const a = origin('a');
const b = origin('b');
await new Promise<void>((r) => a.server.listen(0, '127.0.0.1', () => r()));
await new Promise<void>((r) => b.server.listen(0, '127.0.0.1', () => r()));
const portA = (a.server.address() as AddressInfo).port;
const portB = (b.server.address() as AddressInfo).port;
const A = `http://127.0.0.1:${portA}`;
const B = `http://127.0.0.1:${portB}`;

// A CONNECT proxy on loopback that records the authorities it was asked to reach.
const tunnels: string[] = [];
const proxy = net.createServer((client) => {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    client.off('data', onData);
    const [, authority] = /^CONNECT (\S+) HTTP\/1\.1/.exec(head.toString('latin1')) ?? [];
    tunnels.push(authority);
    const [host, port] = [authority.slice(0, authority.lastIndexOf(':')), Number(authority.slice(authority.lastIndexOf(':') + 1))];
    const upstream = net.connect({ host, port }, () => {
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      const rest = head.subarray(end + 4);
      if (rest.length) upstream.write(rest);
      client.pipe(upstream).pipe(client);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  };
  client.on('data', onData);
});
await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;

after(async () => {
  for (const s of [a.server, b.server, proxy]) {
    (s as http.Server).closeAllConnections?.();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

const opts = { allowInternalHosts: [`127.0.0.1:${portA}`, `127.0.0.1:${portB}`, proxyUrl.slice('http://'.length)] };
const post = { method: 'POST', headers: { 'content-type': 'text/plain', 'x-token': 'secret-1' }, body: 'the body' };

async function read(res: IncomingMessage): Promise<string> {
  let text = '';
  res.setEncoding('utf8');
  for await (const chunk of res) text += chunk;
  return text;
}

test('guardedFetch sends the method, headers and body it is given', async () => {
  a.seen.length = 0;
  const res = await guardedFetch(`${A}/echo`, post, opts);
  assert.deepEqual(await res.json(), { from: 'a', method: 'POST', body: 'the body' });
  assert.equal(a.seen[0].headers['x-token'], 'secret-1');
});

test('guardedRequest sends them too, to the checked address of a name no resolver knows', async () => {
  a.seen.length = 0;
  const pinned = { allowInternalHosts: [`pinned.invalid:${portA}`], resolve: async () => ['127.0.0.1'] };
  const res = await guardedRequest(`http://pinned.invalid:${portA}/echo`, post, pinned);
  assert.equal(res.statusCode, 200);
  assert.deepEqual(JSON.parse(await read(res)), { from: 'a', method: 'POST', body: 'the body' });
  assert.equal(a.seen[0].headers['x-token'], 'secret-1');
  assert.equal(a.seen[0].headers.host, `pinned.invalid:${portA}`);
});

test('through a CONNECT proxy, the tunnel goes to the checked address and carries the whole request', async () => {
  tunnels.length = 0;
  a.seen.length = 0;
  const fetched = await guardedFetch(`${A}/echo`, { ...post, proxy: { url: proxyUrl } }, opts);
  assert.deepEqual(await fetched.json(), { from: 'a', method: 'POST', body: 'the body' });
  const requested = await guardedRequest(`${A}/echo`, { ...post, proxy: { url: proxyUrl } }, opts);
  assert.deepEqual(JSON.parse(await read(requested)), { from: 'a', method: 'POST', body: 'the body' });
  assert.deepEqual(tunnels, [`127.0.0.1:${portA}`, `127.0.0.1:${portA}`]);
  assert.deepEqual(a.seen.map((s) => s.headers['x-token']), ['secret-1', 'secret-1']);
});

test('HEAD and 204 answers have no body; a GET answer has one', async () => {
  const head = await guardedFetch(`${A}/echo`, { method: 'HEAD' }, opts);
  assert.equal(head.status, 200);
  assert.equal(head.body, null);
  const empty = await guardedFetch(`${A}/empty`, {}, opts);
  assert.equal(empty.status, 204);
  assert.equal(empty.body, null);
  const get = await guardedFetch(`${A}/echo`, {}, opts);
  assert.notEqual(get.body, null);
  assert.equal(((await get.json()) as { method: string }).method, 'GET');
});

test('only a 3xx with a Location moves: a 200, 400 or 304 with one, and a 302 without one, are returned', async () => {
  const to = encodeURIComponent(`${A}/echo`);
  for (const code of [200, 400, 304]) {
    a.seen.length = 0;
    const res = await guardedFetch(`${A}/move?code=${code}&to=${to}`, { maxRedirects: 3 }, opts);
    assert.equal(res.status, code, `status ${code}`);
    assert.deepEqual(a.seen.map((s) => s.url), [`/move?code=${code}&to=${to}`], `status ${code} is not followed`);
  }
  const bare = await guardedFetch(`${A}/move?code=302`, { maxRedirects: 3 }, opts);
  assert.equal(bare.status, 302);
  const multiple = await guardedFetch(`${A}/move?code=300&to=${to}`, { maxRedirects: 3 }, opts);
  assert.equal(multiple.status, 200, 'a 300 with a Location is followed');
});

test('at most maxRedirects moves are followed, then the redirect itself is returned', async () => {
  a.seen.length = 0;
  const res = await guardedFetch(`${A}/loop`, { maxRedirects: 2 }, opts);
  assert.equal(res.status, 302);
  assert.equal(a.seen.length, 3);
});

test('307 and 308 keep the method and body; 301, 302 and 303 become a GET without a body', async () => {
  for (const code of [307, 308]) {
    const res = await guardedFetch(`${A}/move?code=${code}&to=/echo`, { ...post, maxRedirects: 1 }, opts);
    assert.deepEqual(await res.json(), { from: 'a', method: 'POST', body: 'the body' }, `status ${code}`);
  }
  for (const code of [301, 302, 303]) {
    a.seen.length = 0;
    const res = await guardedFetch(`${A}/move?code=${code}&to=/echo`, { ...post, maxRedirects: 1 }, opts);
    assert.deepEqual(await res.json(), { from: 'a', method: 'GET', body: '' }, `status ${code}`);
    assert.equal(a.seen[1].headers['content-length'], undefined, `status ${code}: no body announced`);
  }
});

test('a move within the origin keeps the caller\'s headers; a move to another origin drops them', async () => {
  a.seen.length = 0;
  b.seen.length = 0;
  await (await guardedFetch(`${A}/move?code=307&to=/echo`, { ...post, maxRedirects: 1 }, opts)).json();
  assert.equal(a.seen[1].headers['x-token'], 'secret-1');
  const away = await guardedFetch(`${A}/move?code=307&to=${encodeURIComponent(`${B}/echo`)}`, { ...post, maxRedirects: 1 }, opts);
  assert.deepEqual(await away.json(), { from: 'b', method: 'POST', body: 'the body' });
  assert.equal(b.seen[0].headers['x-token'], undefined);
});
