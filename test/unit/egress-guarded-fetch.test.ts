import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkEgressTarget, EgressRefusal, guardedFetch } from '../../lib/egress.ts';

// One local upstream on 127.0.0.1: /hello answers, /away redirects to a host that is not allowed,
// /here redirects back to itself.
const hits: string[] = [];
const server = http.createServer((req, res) => {
  hits.push(req.url ?? '');
  if (req.url === '/away') {
    res.writeHead(302, { location: `http://localhost:${port}/hello` }).end();
    return;
  }
  if (req.url === '/here') {
    res.writeHead(302, { location: '/hello' }).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'text/plain', 'x-host': req.headers.host ?? '' }).end('hello');
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
const port = (server.address() as AddressInfo).port;
after(() => new Promise<void>((r) => server.close(() => r())));

const refusal = (kind: string) => (err: unknown) => err instanceof EgressRefusal && err.kind === kind;

test('an internal address is refused unless its host and port are named in allowInternalHosts', async () => {
  await assert.rejects(checkEgressTarget(`http://127.0.0.1:${port}/`, { allowInternalHosts: [] }), refusal('blocked'));
  const ok = await checkEgressTarget(`http://127.0.0.1:${port}/`, { allowInternalHosts: [`127.0.0.1:${port}`] });
  assert.deepEqual(ok.addresses, ['127.0.0.1']);
});

test('numeric, hexadecimal and IPv4-mapped spellings of loopback are refused', async () => {
  for (const url of ['http://2130706433/', 'http://0x7f.1/', 'http://017700000001/', 'http://[::ffff:127.0.0.1]/', 'http://[::1]/', 'http://[0:0:0:0:0:ffff:7f00:1]/']) {
    await assert.rejects(checkEgressTarget(url, { allowInternalHosts: [] }), refusal('blocked'), url);
  }
});

test('a name is judged by every address it resolves to', async () => {
  const resolve = async (host: string) => (host === 'mixed.test' ? ['8.8.8.8', '10.0.0.1'] : ['93.184.216.34']);
  await assert.rejects(checkEgressTarget('https://mixed.test/', { allowInternalHosts: [], resolve }), refusal('blocked'));
  const ok = await checkEgressTarget('https://public.test/', { allowInternalHosts: [], resolve });
  assert.deepEqual(ok.addresses, ['93.184.216.34']);
  await assert.rejects(checkEgressTarget('http://localhost/', { allowInternalHosts: [] }), refusal('blocked'));
  await assert.rejects(
    checkEgressTarget('https://nowhere.test/', { allowInternalHosts: [], resolve: async () => { throw new Error('ENOTFOUND'); } }),
    refusal('unresolvable'),
  );
});

test('authorizedHosts narrows the internal allowance to hosts named in both lists', async () => {
  await assert.rejects(checkEgressTarget(`http://127.0.0.1:${port}/`, { allowInternalHosts: [`127.0.0.1:${port}`], authorizedHosts: ['api.example.com'] }), refusal('blocked'));
  await checkEgressTarget(`http://127.0.0.1:${port}/`, { allowInternalHosts: [`127.0.0.1:${port}`], authorizedHosts: ['127.0.0.1'] });
});

test('schemes other than http and https, and URLs with credentials, are refused', async () => {
  for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'gopher://x/', 'https://user:pw@example.com/', 'not a url']) {
    await assert.rejects(checkEgressTarget(url, { allowInternalHosts: [] }), refusal('invalid_url'), url);
  }
});

test('the connection goes to the checked address: a name resolved once, never again', async () => {
  let lookups = 0;
  const resolve = async () => {
    lookups++;
    // a rebinding resolver: the first answer is the allowed one, later ones another loopback address
    return lookups === 1 ? ['127.0.0.1'] : ['127.0.0.2'];
  };
  const res = await guardedFetch(`http://pinned.test:${port}/hello`, {}, { allowInternalHosts: [`pinned.test:${port}`], resolve });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'hello');
  assert.equal(res.headers.get('x-host'), `pinned.test:${port}`);
  assert.equal(lookups, 1);
});

test('a redirect is returned as is by default and followed only to a checked target', async () => {
  const opts = { allowInternalHosts: [`127.0.0.1:${port}`] };
  const manual = await guardedFetch(`http://127.0.0.1:${port}/away`, {}, opts);
  assert.equal(manual.status, 302);

  hits.length = 0;
  await assert.rejects(guardedFetch(`http://127.0.0.1:${port}/away`, { maxRedirects: 3 }, opts), refusal('blocked'));
  assert.deepEqual(hits, ['/away'], 'the refused target was never contacted');

  const followed = await guardedFetch(`http://127.0.0.1:${port}/here`, { maxRedirects: 3 }, opts);
  assert.equal(followed.status, 200);
  assert.equal(await followed.text(), 'hello');
});
