// The API serves the dashboard's built page at / and its hashed assets, from local files: the
// page under a strict Content-Security-Policy (no inline script or style, this origin only), the
// assets cached for good and revalidated by ETag; nothing else of the API changes.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
// @ts-expect-error: a plain ESM script without type declarations
import { ensureBundle } from '../../bin/start.mjs';
import { startTestApp, type TestApp } from '../support/app.ts';
import { call } from '../support/http.ts';
import { ROOT } from '../support/sdk-build.ts';

let app: TestApp;

before(async () => {
  await ensureBundle();
  app = await startTestApp();
});
after(async () => {
  await app.close();
});

test('/ is the dashboard page under a strict CSP, naming its script and stylesheet', async () => {
  const res = await call(app.url, 'GET', '/');
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^text\/html/);
  const csp = res.headers.get('content-security-policy')!;
  for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) assert.ok(csp.includes(directive), directive);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  assert.equal(res.headers.get('x-frame-options'), 'DENY');
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  // no inline script or style in the page itself
  assert.doesNotMatch(res.text, /<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=/i);
  const script = /<script type="module" src="(\/assets\/app-[A-Z0-9]+\.js)">/.exec(res.text)?.[1];
  const sheet = /<link rel="stylesheet" href="(\/assets\/app-[A-Z0-9]+\.css)">/.exec(res.text)?.[1];
  assert.ok(script && sheet, res.text);
  const js = await call(app.url, 'GET', script);
  assert.equal(js.status, 200);
  assert.match(js.headers.get('content-type')!, /^text\/javascript/);
  assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  const again = await call(app.url, 'GET', script, { headers: { 'if-none-match': js.headers.get('etag')! } });
  assert.equal(again.status, 304);
  assert.equal((await call(app.url, 'GET', sheet)).status, 200);
});

test('only the built files are served; other paths and methods stay the API\'s', async () => {
  const built = readdirSync(join(ROOT, 'dist/web/assets'));
  assert.ok(built.length >= 2);
  const missing = await call(app.url, 'GET', '/assets/app-NOTBUILT.js');
  assert.equal(missing.status, 404);
  assert.equal(missing.body.code, 'not_found');
  assert.equal((await call(app.url, 'GET', '/assets/../package.json')).status, 404);
  assert.equal((await call(app.url, 'POST', '/')).status, 404);
  assert.equal((await call(app.url, 'GET', '/index.html')).status, 404);
  const head = await fetch(`${app.url}/`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(await head.text(), '');
});
