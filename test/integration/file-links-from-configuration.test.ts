// Issue 29 item 5: signed upload and preview links carry a bearer token, so their base comes from
// PUBLIC_URL or, without it, the address the server accepted the connection on; a forged Host or
// X-Forwarded-Host never reaches them.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { rawCall } from '../support/http.ts';

const FORGED = { host: 'attacker.example', 'x-forwarded-host': 'attacker.example', 'x-forwarded-proto': 'https', forwarded: 'host=attacker.example;proto=https' };

let plain: TestApp;
let configured: TestApp;
before(async () => {
  [plain, configured] = await Promise.all([
    startTestApp({ env: { TRUST_PROXY: 'loopback' } }),
    startTestApp({ env: { PUBLIC_URL: 'https://platform.example/', TRUST_PROXY: 'loopback' } }),
  ]);
});
after(async () => {
  await Promise.all([plain?.close(), configured?.close()]);
});

async function links(app: TestApp): Promise<{ upload_url: string; location: unknown; preview_url?: string }> {
  const org = await anOrg(app.deps.database.pool);
  const { key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId });
  const headers = { ...FORGED, authorization: `Bearer ${key}` };
  const content = 'linked words';
  const staged = await rawCall(app.url, 'POST', '/api/uploads', headers, { name: 'words.txt', size: content.length, mime_type: 'text/plain' });
  assert.equal(staged.status, 201, staged.text);
  if (app === configured) return { upload_url: staged.body.upload_url, location: staged.headers.location };
  const put = await fetch(staged.body.upload_url, { method: 'PUT', body: content, headers: { 'content-type': 'application/octet-stream' } });
  const written = await put.text();
  assert.equal(put.status, 201, written);
  const file = await rawCall(app.url, 'GET', `/api/files/${(JSON.parse(written) as { id: string }).id}`, headers);
  assert.equal(file.status, 200, file.text);
  return { upload_url: staged.body.upload_url, location: staged.headers.location, preview_url: file.body.preview_url };
}

test('without PUBLIC_URL, upload and preview links name the listening address, whatever Host the caller sends', async () => {
  const l = await links(plain);
  const origin = new URL(plain.url).origin;
  assert.equal(new URL(l.upload_url).origin, origin);
  assert.equal(l.location, l.upload_url);
  assert.equal(new URL(l.preview_url!).origin, origin);
  const shown = await fetch(l.preview_url!);
  assert.equal(shown.status, 200);
  assert.equal(await shown.text(), 'linked words');
});

test('with PUBLIC_URL, links are built on it', async () => {
  const l = await links(configured);
  assert.match(l.upload_url, /^https:\/\/platform\.example\/api\/uploads\/_content\?token=/);
  assert.equal(l.location, l.upload_url);
});
