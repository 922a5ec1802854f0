// The rate-limit rows of the files routes: POST /api/uploads 20 per caller; PUT /api/uploads/_content
// 60 and GET /preview/files/{id} 120 per client IP; the reads 120 and DELETE/keep 60 per caller.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { useTestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';

const { app, pool } = useTestApp({
  env: { DATA_DIR: mkdtempSync(path.join(tmpdir(), 'files-rl-')), TRUST_PROXY: 'true', UPLOAD_MAX_ACTIVE_PER_ACTOR: '100' },
});

async function aCaller() {
  const org = await anOrg(pool());
  return client(app().url, { key: (await aKey(pool(), { ...org, userId: org.ownerId })).key });
}

/** Calls `hit` `limit` times (each within the limit), then once more: 429 rate_limited with the headers. */
async function exhaust(limit: number, hit: () => Promise<{ status: number; headers: Headers; body: any }>, what: string) {
  for (let i = 0; i < limit; i++) {
    const res = await hit();
    assert.notEqual(res.status, 429, `${what}: call ${i + 1} of ${limit}`);
    assert.equal(res.headers.get('ratelimit-policy'), `${limit};w=60`, what);
  }
  const over = await hit();
  assert.equal(over.status, 429, what);
  assert.equal(over.body.code, 'rate_limited', what);
  assert.equal(over.headers.get('ratelimit-policy'), `${limit};w=60`, what);
  assert.ok(Number(over.headers.get('retry-after')) > 0, what);
}

async function fromIp(ip: string, method: string, url: string) {
  const res = await fetch(url, { method, headers: { 'x-forwarded-for': ip }, body: method === 'PUT' ? 'x' : undefined });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

test('POST /api/uploads: 20 per minute per caller', async () => {
  const c = await aCaller();
  await exhaust(20, () => c.post('/api/uploads', { name: 'a.txt', size: 1, mime_type: 'text/plain' }), 'POST /api/uploads');
  assert.equal((await (await aCaller()).post('/api/uploads', { name: 'a.txt', size: 1, mime_type: 'text/plain' })).status, 201, 'another caller has its own bucket');
});

test('PUT /api/uploads/_content: 60 per minute per client IP', async () => {
  const url = `${app().url}/api/uploads/_content?token=v1.not.a.token`;
  await exhaust(60, () => fromIp('203.0.113.7', 'PUT', url), 'PUT /api/uploads/_content');
  assert.equal((await fromIp('203.0.113.8', 'PUT', url)).status, 401, 'another IP has its own bucket');
});

test('GET /preview/files/{id}: 120 per minute per client IP', async () => {
  const url = `${app().url}/preview/files/file_x?token=v1.not.a.token`;
  await exhaust(120, () => fromIp('198.51.100.7', 'GET', url), 'GET /preview/files/{id}');
  assert.equal((await fromIp('198.51.100.8', 'GET', url)).status, 401, 'another IP has its own bucket');
});

test('reads of files: 120 per minute per caller; DELETE and keep: 60', async () => {
  const c = await aCaller();
  const staged = await c.post('/api/uploads', { name: 'a.txt', size: 1, mime_type: 'text/plain' });
  const file = await fetch(staged.body.upload_url, { method: 'PUT', body: 'x', headers: { 'x-forwarded-for': '192.0.2.50' } }).then((r) => r.json()) as { id: string };
  await exhaust(120, () => c.get('/api/files'), 'GET /api/files');
  await exhaust(120, () => c.get(`/api/files/${file.id}`), 'GET /api/files/{id}');
  await exhaust(120, () => c.get(`/api/files/${file.id}/content`), 'GET /api/files/{id}/content');
  await exhaust(60, () => c.post(`/api/files/${file.id}/keep`), 'POST /api/files/{id}/keep');
  await exhaust(60, () => c.delete('/api/files/file_missing'), 'DELETE /api/files/{id}');
});
