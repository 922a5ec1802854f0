// The platform's Restate addresses as a list (a cluster's nodes): requests go to a node that can be
// connected to, in the list's order, and stay with it; a node that answers (even with an error
// status) is not skipped; the settings accept one URL or a comma-separated list of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../../lib/free-port.ts';
import { failoverFetch, isRestateAddressList, primaryAddress, restateAddresses, restateFetch } from '../../lib/restate-failover.ts';
import { loadConfig } from '../../lib/config.ts';

async function aNode(status = 200): Promise<{ url: string; paths: string[]; close(): Promise<void> }> {
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${body}`);
      res.writeHead(status, { 'content-type': 'text/plain' }).end('node');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

test('a list of addresses: trimmed, without trailing slashes; the first is where requests are written', () => {
  assert.deepEqual(restateAddresses(' http://a:8080/ , http://b:8080,,http://c:8080//'), ['http://a:8080', 'http://b:8080', 'http://c:8080']);
  assert.equal(primaryAddress('http://a:8080/,http://b:8080'), 'http://a:8080');
  assert.equal(isRestateAddressList('http://a:8080'), true);
  assert.equal(isRestateAddressList('http://a:8080,https://b:8080'), true);
  assert.equal(isRestateAddressList('http://a:8080,not a url'), false);
  assert.equal(isRestateAddressList('ftp://a:21'), false);
  assert.equal(isRestateAddressList(' , '), false);
});

test('the settings take one URL or a list, and refuse anything else', () => {
  const base = { ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') };
  const list = 'http://127.0.0.1:8080,http://127.0.0.1:18080';
  const config = loadConfig({ ...base, RESTATE_INGRESS_URL: list, RESTATE_ADMIN_URL: 'http://127.0.0.1:9070' });
  assert.equal(config.RESTATE_INGRESS_URL, list);
  assert.throws(() => loadConfig({ ...base, RESTATE_INGRESS_URL: 'http://127.0.0.1:8080,nope', RESTATE_ADMIN_URL: 'http://127.0.0.1:9070' }), /RESTATE_INGRESS_URL/);
});

test('a node that cannot be connected to is passed over, the next one answers, and later requests stay with it', async () => {
  const gone = `http://127.0.0.1:${await freePort()}`;
  const second = await aNode();
  const third = await aNode();
  try {
    const list = `${gone},${second.url},${third.url}`;
    const res = await restateFetch(list, '/restate/health?x=1', { method: 'POST', body: 'payload' });
    assert.equal(res.status, 200);
    assert.deepEqual(second.paths, ['POST /restate/health?x=1 payload'], 'the path, query and body reach the next node');
    // written against the first address, sent to the node that answered last
    await failoverFetch(list)(`${gone}/query`);
    assert.deepEqual(second.paths.slice(1), ['GET /query '], 'stays with the node that answered');
    assert.deepEqual(third.paths, []);
  } finally {
    await second.close();
    await third.close();
  }
});

test('a node that answers with an error status is not passed over; when none can be connected to, the error says so', async () => {
  const failing = await aNode(503);
  const other = await aNode();
  try {
    const res = await restateFetch(`${failing.url},${other.url}`, '/health');
    assert.equal(res.status, 503, 'the answer is the node\'s own (the callers retry 5xx as they did)');
    assert.deepEqual(other.paths, []);
  } finally {
    await failing.close();
    await other.close();
  }
  const none = `http://127.0.0.1:${await freePort()},http://127.0.0.1:${await freePort()}`;
  await assert.rejects(restateFetch(none, '/health'), (err: Error) => /fetch failed/.test(err.message));
});

test('a single address is plain fetch; a URL outside the list is left alone', async () => {
  const node = await aNode();
  try {
    assert.equal((await failoverFetch(node.url)(`${node.url}/one`)).status, 200);
    const gone = `http://127.0.0.1:${await freePort()}`;
    assert.equal((await failoverFetch(`${gone},http://127.0.0.1:1`)(`${node.url}/two`)).status, 200);
    assert.deepEqual(node.paths, ['GET /one ', 'GET /two ']);
  } finally {
    await node.close();
  }
});
