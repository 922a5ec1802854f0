// The route table under the pipeline: exact paths before parameterised ones, parameters decoded,
// one trailing slash ignored, HEAD served by GET; and the client address under TRUST_PROXY.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { clientIp, compileTrust, decorate, RouteTable } from '../../api/http.ts';

function table() {
  const t = new RouteTable<string>();
  t.add('get', '/api/runs/{id}', 'read run');
  t.add('get', '/api/runs/inline', 'never: inline is a POST');
  t.add('post', '/api/runs/inline', 'inline');
  t.add('get', '/api/runs', 'list runs');
  t.add('get', '/api/agents/{scope}/{name}/runs', 'agent runs');
  t.add('delete', '/api/runs/{id}', 'delete run');
  return t;
}

test('exact paths win over parameterised ones, whatever the order they were added in', () => {
  const t = table();
  assert.equal(t.match('POST', '/api/runs/inline')?.value, 'inline');
  assert.equal(t.match('GET', '/api/runs/run_1')?.value, 'read run');
  assert.deepEqual(t.match('GET', '/api/runs/run_1')?.params, { id: 'run_1' });
  assert.equal(t.match('GET', '/api/runs')?.value, 'list runs');
});

test('parameters are percent-decoded; a bad encoding throws; an empty segment matches nothing', () => {
  const t = table();
  assert.deepEqual(t.match('GET', '/api/agents/%40acme/echo/runs')?.params, { scope: '@acme', name: 'echo' });
  assert.throws(() => t.match('GET', '/api/agents/%E0%A4%A/echo/runs'), URIError);
  assert.equal(t.match('GET', '/api/agents//echo/runs'), null);
  assert.equal(t.match('GET', '/api/agents/a/b/c/runs'), null);
});

test('one trailing slash is ignored, HEAD is served by GET, other methods are not', () => {
  const t = table();
  assert.equal(t.match('GET', '/api/runs/')?.value, 'list runs');
  assert.equal(t.match('HEAD', '/api/runs/run_2')?.value, 'read run');
  assert.equal(t.match('PUT', '/api/runs/run_2'), null);
  assert.deepEqual(t.methodsFor('/api/runs/run_2'), ['GET', 'DELETE']);
  assert.deepEqual(t.methodsFor('/api/nowhere'), []);
});

test('decorate splits path and query; repeated query names give arrays', () => {
  const req = decorate({ url: '/api/runs?status=running&status=pending&limit=5' } as IncomingMessage);
  assert.equal(req.path, '/api/runs');
  assert.equal(req.originalUrl, '/api/runs?status=running&status=pending&limit=5');
  assert.deepEqual(req.query.status, ['running', 'pending']);
  assert.equal(req.query.limit, '5');
  assert.deepEqual({ ...decorate({ url: '/api/runs' } as IncomingMessage).query }, {});
});

test('the client address follows TRUST_PROXY', () => {
  const req = (peer: string, xff?: string) =>
    ({ socket: { remoteAddress: peer }, connection: { remoteAddress: peer }, headers: xff ? { 'x-forwarded-for': xff } : {} }) as unknown as IncomingMessage;
  const chain = req('127.0.0.1', '203.0.113.9, 10.0.0.2');
  assert.equal(clientIp(chain, compileTrust(false)), '127.0.0.1', 'no proxy trusted: the peer');
  assert.equal(clientIp(chain, compileTrust(true)), '203.0.113.9', 'every hop trusted: the left-most entry');
  assert.equal(clientIp(chain, compileTrust(1)), '10.0.0.2', 'one hop trusted');
  assert.equal(clientIp(chain, compileTrust(['loopback'])), '10.0.0.2', 'the loopback proxy is trusted, 10.0.0.2 is not');
  assert.equal(clientIp(chain, compileTrust(['loopback', '10.0.0.0/8'])), '203.0.113.9');
  assert.equal(clientIp(req('198.51.100.7', '203.0.113.9'), compileTrust(['loopback'])), '198.51.100.7', 'an untrusted peer cannot forge the header');
});
