// Issue 29 item 4: the reset token never appears in an HTTP answer. A development instance (what
// `npm start` runs) without mail writes the link, built on PUBLIC_URL or the configured listening
// address (never the request's headers), to DATA_DIR/reset-links.log and says so at boot; the
// answer is the same bytes, after the same time, for known and unknown addresses.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { RESET_ANSWER_FLOOR_MS } from '../../api/routes/auth.ts';
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { createMailer, publicBaseUrl } from '../../lib/mail.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aUserWithPassword } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { readResetLinks, resetLinkFor } from '../support/reset-links.ts';

let dev: TestApp;
let prod: TestApp;
const devDir = fs.mkdtempSync(path.join(os.tmpdir(), 'reset-dev-'));
const prodDir = fs.mkdtempSync(path.join(os.tmpdir(), 'reset-prod-'));
before(async () => {
  [dev, prod] = await Promise.all([
    startTestApp({ env: { NODE_ENV: 'development', DATA_DIR: devDir, HOST: '127.0.0.1', PORT: '4719' } }),
    startTestApp({ env: { NODE_ENV: 'production', DATA_DIR: prodDir } }),
  ]);
});
after(async () => {
  await Promise.all([dev?.close(), prod?.close()]);
  fs.rmSync(devDir, { recursive: true, force: true });
  fs.rmSync(prodDir, { recursive: true, force: true });
});

/** A raw request, so that Host and X-Forwarded-* can be forged as a hostile caller would. */
function forged(base: string, pathName: string, body: unknown): Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders; ms: number }> {
  const u = new URL(base);
  const payload = JSON.stringify(body);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: u.hostname, port: u.port, path: pathName, method: 'POST',
      headers: { host: 'attacker.example', 'x-forwarded-host': 'attacker.example', 'x-forwarded-proto': 'https', 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers, ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

test('development without mail: the answer never carries the token; the link goes to DATA_DIR/reset-links.log, built on the configured address', async () => {
  const u = await aUserWithPassword(dev.deps.database.pool);
  const known = await forged(dev.url, '/api/auth/request-password-reset', { email: u.email });
  assert.equal(known.status, 202);
  assert.deepEqual(JSON.parse(known.text), { status: 'accepted', delivery: 'disabled' });

  const { url, token } = await resetLinkFor(dev, u.email);
  assert.ok(!known.text.includes(token));
  assert.ok(!JSON.stringify(known.headers).includes(token));
  assert.equal(`${url.origin}${url.pathname}`, 'http://127.0.0.1:4719/api/auth/reset-password');
  assert.equal(publicBaseUrl(dev.deps.config), 'http://127.0.0.1:4719');
  const file = path.join(devDir, 'reset-links.log');
  assert.equal(fs.statSync(file).mode & 0o077, 0, 'the file is readable by its owner only');
  const entries = await readResetLinks(file);
  assert.ok(entries.every((e) => !e.link.includes('attacker.example')));

  // the link works, once
  assert.equal((await client(dev.url).post('/api/auth/reset-password', { token, new_password: 'chosen by the owner' })).status, 204);
  assert.equal((await client(dev.url).post('/api/auth/sign-in/email', { email: u.email, password: 'chosen by the owner' })).status, 200);
});

test('known and unknown addresses get byte-identical answers after the same time', async () => {
  const u = await aUserWithPassword(dev.deps.database.pool);
  const knownMs: number[] = [];
  const unknownMs: number[] = [];
  const bodies = new Set<string>();
  for (let i = 0; i < 6; i++) {
    const k = await forged(dev.url, '/api/auth/request-password-reset', { email: u.email });
    const n = await forged(dev.url, '/api/auth/request-password-reset', { email: `nobody-${i}@example.test` });
    assert.deepEqual([k.status, n.status], [202, 202]);
    bodies.add(k.text).add(n.text);
    for (const h of ['content-type', 'content-length']) assert.equal(k.headers[h], n.headers[h], h);
    knownMs.push(k.ms);
    unknownMs.push(n.ms);
  }
  assert.deepEqual([...bodies], ['{"status":"accepted","delivery":"disabled"}']);
  // both wait for the floor; the work behind a known address does not show (a generous bound for a shared machine)
  assert.ok(Math.min(...knownMs, ...unknownMs) >= RESET_ANSWER_FLOOR_MS - 5, `${Math.min(...knownMs, ...unknownMs)} ms`);
  const gap = Math.abs(median(knownMs) - median(unknownMs));
  assert.ok(gap < 60, `median known ${median(knownMs).toFixed(1)} ms, unknown ${median(unknownMs).toFixed(1)} ms`);
  await resetLinkFor(dev, u.email);
  const { rowCount } = await dev.deps.database.pool.query('SELECT 1 FROM password_resets WHERE user_id = $1', [u.userId]);
  assert.equal(rowCount, 1, 'one pending link: each request replaced the previous one');
});

test('production without mail: the same answer, no token, no reset-link file', async () => {
  const u = await aUserWithPassword(prod.deps.database.pool);
  const res = await client(prod.url).post('/api/auth/request-password-reset', { email: u.email });
  assert.deepEqual([res.status, res.text], [202, '{"status":"accepted","delivery":"disabled"}']);
  const links = await prod.deps.database.pool.query('SELECT 1 FROM password_resets WHERE user_id = $1', [u.userId]);
  assert.equal(links.rowCount, 1);
  assert.deepEqual(fs.readdirSync(prodDir).filter((f) => f.includes('reset')), []);
});

test('boot says where a development instance writes reset links', () => {
  const lines: string[] = [];
  const config = loadConfig({ NODE_ENV: 'development', DATA_DIR: devDir, DATABASE_URL: 'postgres://x@127.0.0.1/x', BOOTSTRAP_TOKEN: 'test-bootstrap-token-0123456789' });
  createMailer(config, createLogger('info', 'platform', (l) => lines.push(l)));
  const said = lines.map((l) => JSON.parse(l) as { level: string; msg: string });
  assert.ok(said.some((l) => l.level === 'warn' && l.msg.includes(path.join(devDir, 'reset-links.log'))), JSON.stringify(said));
});
