// The OpenID provider's device flow and the interactive API reference in real Chromium: one
// platform (in process) and one browser for the file. The device flow is how a CLI signs in: the
// code entry page has one user_code input, verification_uri_complete opens the confirmation under
// the page's Content-Security-Policy (nothing refused), and wrong codes are limited per address.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import * as oidc from 'openid-client';
import { DEVICE_CODE_ATTEMPTS } from '../../api/modules/oidc/rate-limit.ts';
import { aUserWithPassword } from '../support/builders.ts';
import { launchChromium, watchPageErrors } from '../support/browser.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aClient, relyingParty } from '../integration/oidc-harness.ts';

let app: TestApp;
let browser: Browser;
let person: { userId: string; email: string; password: string };
let rp: oidc.Configuration;

before(async () => {
  [app, browser] = await Promise.all([startTestApp(), launchChromium()]);
  const pool = app.deps.database.pool;
  person = await aUserWithPassword(pool);
  await aClient(pool, { id: 'oac_cli', level: 'instance', scopes: ['agents:read'] });
  rp = await relyingParty(app.url, 'oac_cli');
});
after(async () => {
  await browser?.close();
  await app?.close();
});

test('device flow in Chromium: one code input, confirm, sign in, consent; the device gets its tokens', async () => {
  const device = await oidc.initiateDeviceAuthorization(rp, { scope: 'openid email agents:read' });
  const polled = oidc.pollDeviceAuthorizationGrant(rp, device);
  const context = await browser.newContext();
  const page = await context.newPage();
  const refused = watchPageErrors(page);
  try {
    await page.goto(device.verification_uri);
    assert.equal(await page.locator('input[name="user_code"]').count(), 1, 'one user_code input');
    await page.getByLabel('Code').fill(device.user_code);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Confirm device' }).waitFor();
    assert.ok((await page.textContent('body'))!.includes(device.user_code));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(person.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.getByText('Your device is signed in').waitFor();
    assert.deepEqual(refused, []);
  } finally {
    await context.close();
  }
  const tokens = await polled;
  assert.ok(tokens.access_token);
  assert.equal(tokens.claims()?.sub, person.userId);
});

test('verification_uri_complete opens the confirmation under the page CSP, nothing refused', async () => {
  const device = await oidc.initiateDeviceAuthorization(rp, { scope: 'openid agents:read' });
  assert.ok(device.verification_uri_complete);
  const context = await browser.newContext();
  const page = await context.newPage();
  const refused = watchPageErrors(page);
  try {
    const res = await page.goto(device.verification_uri_complete!);
    assert.match(res!.headers()['content-security-policy'] ?? '', /default-src 'none'/);
    await page.getByRole('heading', { name: 'Confirm device' }).waitFor({ timeout: 10_000 });
    assert.ok((await page.textContent('body'))!.includes(device.user_code));
    assert.deepEqual(refused, []);
  } finally {
    await context.close();
  }
});

test(`the code entry page answers 429 after ${DEVICE_CODE_ATTEMPTS.max} wrong codes from one address`, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    const statuses: number[] = [];
    await page.goto(`${app.url}/api/auth/device`);
    for (let i = 0; i <= DEVICE_CODE_ATTEMPTS.max; i++) {
      // each wrong code gives the entry page again, saying so
      if (i > 0 && i < DEVICE_CODE_ATTEMPTS.max) await page.getByText('That code is not valid or has expired').waitFor();
      await page.getByLabel('Code').fill('BCDF-GHJK');
      const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.getByRole('button', { name: 'Continue' }).click()]);
      statuses.push(answer.status());
      if (i === DEVICE_CODE_ATTEMPTS.max) {
        assert.ok(Number(answer.headers()['retry-after']) > 0, 'Retry-After');
        await page.getByText('Too many wrong codes from this address').waitFor();
      }
    }
    assert.deepEqual(statuses, [...Array(DEVICE_CODE_ATTEMPTS.max).fill(200), 429]);
    // a right code is refused too until the window ends
    const device = await oidc.initiateDeviceAuthorization(rp, { scope: 'agents:read' });
    await page.goto(`${app.url}/api/auth/device`);
    await page.getByLabel('Code').fill(device.user_code);
    const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.getByRole('button', { name: 'Continue' }).click()]);
    assert.equal(answer.status(), 429);
  } finally {
    await context.close();
  }
});

test('/api/docs: every tag is on the page, each opened tag shows all its operations, and Try it out works on GET /api/runs', async () => {
  const doc = (await (await fetch(`${app.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, { tags: string[]; operationId: string }>> };
  const byTag = new Map<string, number>();
  for (const ops of Object.values(doc.paths)) for (const op of Object.values(ops)) byTag.set(op.tags[0], (byTag.get(op.tags[0]) ?? 0) + 1);
  const total = [...byTag.values()].reduce((a, b) => a + b, 0);
  assert.ok(total > 150, `${total} operations: enough for the renderer to window a fully open list`);
  const page = await browser.newPage();
  const refused = watchPageErrors(page);
  try {
    await page.goto(`${app.url}/api/docs`);
    const headings = page.locator('.opblock-tag-section > h3');
    await headings.first().waitFor();
    // every tag at once (Swagger UI keeps only what is near the viewport of a long open list)
    assert.deepEqual((await page.locator('.opblock-tag-section > h3').evaluateAll((hs) => hs.map((h) => h.getAttribute('data-tag')))).sort(), [...byTag.keys()].sort());
    let rendered = 0;
    const short: string[] = [];
    for (const [tag, count] of byTag) {
      const section = page.locator('.opblock-tag-section').filter({ has: page.locator(`h3[data-tag="${tag}"]`) });
      await section.locator('h3').click();
      await section.locator('.opblock').nth(count - 1).waitFor();
      const shown = await section.locator('.opblock').count();
      rendered += shown;
      if (shown !== count) short.push(`${tag}: ${shown} of ${count}`);
      await section.locator('h3').click();
      await section.locator('.opblock').first().waitFor({ state: 'detached' });
    }
    assert.deepEqual(short, []);
    assert.equal(rendered, total);

    // Try it out on GET /api/runs
    const runs = page.locator('.opblock-tag-section').filter({ has: page.locator('h3[data-tag="Runs"]') });
    await runs.locator('h3').click();
    const list = runs.locator('.opblock-get').filter({ has: page.locator('.opblock-summary-path[data-path="/api/runs"]') });
    await list.locator('.opblock-summary-control').click();
    await list.getByRole('button', { name: 'Try it out' }).click();
    await list.getByRole('button', { name: 'Execute' }).waitFor();
    assert.ok(await list.locator('input[placeholder="limit"], tr[data-param-name="limit"] input').count() >= 1, 'the limit parameter is editable');
    assert.deepEqual(refused, []);
  } finally {
    await page.close();
  }
});
