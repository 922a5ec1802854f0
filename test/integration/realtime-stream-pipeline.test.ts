// The request pipeline around the realtime streams: CORS, Request-Id and the body limit apply to
// them, and at shutdown every open stream gets a final event and closes while new ones are refused.
// (The streams themselves: realtime-streams.test.ts.)
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { call } from '../support/http.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';

let w: RunWorld;
let base: string;

before(async () => {
  w = await aRunWorld({ env: { REALTIME_PING_SECONDS: '0.5', TRUSTED_ORIGINS: 'https://app.example.test' } });
  base = w.app.url;
});
after(() => w.close());

const keyed = (key: string) => ({ authorization: `Bearer ${key}` });

describe('the pipeline applies', () => {
  function raw(path: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; firstChunk: string; res: http.IncomingMessage }> {
    return new Promise((resolve, reject) => {
      const req = http.get(`${base}${path}`, { headers }, (res) => {
        res.setEncoding('utf8');
        res.once('data', (c: string) => resolve({ status: res.statusCode!, headers: res.headers, firstChunk: c, res }));
        res.once('end', () => resolve({ status: res.statusCode!, headers: res.headers, firstChunk: '', res }));
      });
      req.on('error', reject);
    });
  }

  test('CORS and Request-Id on the stream; the body limit refuses an oversized request', async () => {
    const answer = await raw('/api/realtime/runs', { ...keyed(w.key), origin: 'https://app.example.test' });
    try {
      assert.equal(answer.status, 200);
      assert.match(String(answer.headers['content-type']), /^text\/event-stream/);
      assert.equal(answer.headers['access-control-allow-origin'], 'https://app.example.test');
      assert.match(String(answer.headers['request-id']), /^req_/);
      assert.match(answer.firstChunk, /^id: [A-Za-z0-9]+:1\nevent: ping\ndata: \{\}\n\n/);
    } finally {
      answer.res.destroy();
    }
    const preflight = await call(base, 'OPTIONS', '/api/realtime/runs', { headers: { origin: 'https://app.example.test', 'access-control-request-method': 'GET' } });
    assert.equal(preflight.status, 204);
    // a declared body over the limit is refused before anything is read or streamed
    const tooLarge = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${base}/api/realtime/runs`, { method: 'GET', headers: { ...keyed(w.key), 'content-length': String(w.app.deps.config.API_BODY_LIMIT_BYTES + 1) } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
        req.destroy();
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    assert.equal(tooLarge, 413);
  });

  test('at shutdown every stream gets a final event and closes; new streams are refused while draining', async () => {
    const answer = await raw('/api/realtime/runs', keyed(w.key));
    let rest = answer.firstChunk;
    const closed = new Promise<void>((r) => answer.res.on('end', () => r()));
    answer.res.on('data', (c: string) => (rest += c));
    w.app.deps.lifecycle.draining = true;
    try {
      w.app.deps.realtime!.closeStreams();
      await closed;
      assert.match(rest, /event: ping\nretry: 1000\ndata: \{"reason":"shutting_down"\}\n\n$/);
      const refused = await call(base, 'GET', '/api/realtime/runs', { key: w.key });
      assert.equal(refused.status, 503);
      assert.equal(refused.body.code, 'shutting_down');
    } finally {
      w.app.deps.lifecycle.draining = false;
    }
  });
});
