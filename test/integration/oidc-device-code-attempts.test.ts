// Issue 29, LOW item: the device code entry page (/api/auth/device) limits wrong codes per client
// address. Driven over HTTP as a person (or a script guessing codes) would, without a browser:
// after DEVICE_CODE_ATTEMPTS.max wrong codes from one address the page answers 429 with
// Retry-After, even to a right code, while another address still enters codes and reaches the
// confirmation. X-Forwarded-For (trusted from loopback here) gives each caller its own address.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as oidc from 'openid-client';
import { DEVICE_CODE_ATTEMPTS } from '../../api/modules/oidc/rate-limit.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aClient, Browser, formsOf, relyingParty } from './oidc-harness.ts';

let app: TestApp;
let rp: oidc.Configuration;

before(async () => {
  app = await startTestApp({ env: { TRUST_PROXY: 'loopback' } });
  await aClient(app.deps.database.pool, { id: 'oac_device_attempts', level: 'instance', scopes: ['agents:read'] });
  rp = await relyingParty(app.url, 'oac_device_attempts');
});
after(() => app.close());

/** A caller at `ip` on the entry page, ready to submit codes. */
async function entryPage(ip: string): Promise<{ submit: (code: string) => Promise<{ status: number; retryAfter: string | null; html: string }> }> {
  const browser = new Browser();
  browser.headers = { 'x-forwarded-for': ip };
  let page = await browser.go(`${app.url}/api/auth/device`);
  assert.equal(page.status, 200);
  let html = await page.text();
  const submit = async (code: string) => {
    const form = formsOf(html).find((f) => f.body.includes('name="user_code"'));
    assert.ok(form, `the entry form is on the page: ${html}`);
    page = await browser.go(new URL(form.action || '/api/auth/device', app.url).toString(), { method: 'POST', form: { ...form.fields, user_code: code } });
    const answer = { status: page.status, retryAfter: page.headers.get('retry-after'), html: await page.text() };
    if (answer.status === 200) html = answer.html;
    return answer;
  };
  return { submit };
}

test(`the entry page answers 429 after ${DEVICE_CODE_ATTEMPTS.max} wrong codes from one address, even to a right code; another address is unaffected`, async () => {
  const guesser = await entryPage('198.51.100.7');
  const statuses: number[] = [];
  for (let i = 0; i < DEVICE_CODE_ATTEMPTS.max; i++) {
    const answer = await guesser.submit(i % 2 ? 'BCDF-GHJK' : 'WXYZ-QRST');
    statuses.push(answer.status);
    assert.match(answer.html, /That code is not valid or has expired/);
  }
  const refused = await guesser.submit('BCDF-GHJK');
  statuses.push(refused.status);
  assert.deepEqual(statuses, [...Array(DEVICE_CODE_ATTEMPTS.max).fill(200), 429]);
  assert.ok(Number(refused.retryAfter) > 0 && Number(refused.retryAfter) <= DEVICE_CODE_ATTEMPTS.windowSeconds, `Retry-After ${refused.retryAfter}`);
  assert.match(refused.html, /Too many wrong codes from this address/);

  // a real code from the same address is refused as well until the window ends
  const device = await oidc.initiateDeviceAuthorization(rp, { scope: 'openid agents:read' });
  const retry = await (await entryPage('198.51.100.7')).submit(device.user_code);
  assert.equal(retry.status, 429);

  // another address enters a wrong code (the page again) and then the right one (the confirmation)
  const other = await entryPage('198.51.100.8');
  const wrong = await other.submit('BCDF-GHJK');
  assert.equal(wrong.status, 200);
  assert.match(wrong.html, /That code is not valid or has expired/);
  const right = await other.submit(device.user_code);
  assert.equal(right.status, 200, right.html);
  assert.match(right.html, /Confirm device/);
  assert.ok(right.html.includes(device.user_code));
});
