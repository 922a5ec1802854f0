// The dashboard in a real headless Chromium against one started platform: a person signs in (with
// a password, or through the instance's OpenID Connect provider),
// launches an agent from its generated form and watches the run succeed live, cancels a running
// run, reruns a failed one, schedules the agent and sees its next fires, creates an API key seen
// once; a member without runs:cancel sees no cancel button and the API still refuses; a page of
// another origin cannot write with the session cookie (not even sign out); a run's tool call
// waiting for approval appears live on its page, as text, and is approved (the run succeeds live)
// or rejected with a reason, while a member without runs:approve is offered neither. Every page
// is checked by axe-core and photographed (the folder is printed).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { assertAccessible, screenshotFolder, watchPageErrors } from '../support/browser.ts';
import { client } from '../support/http.ts';
import pg from 'pg';
import { importPackage, waitForStatus } from '../support/runs.ts';
import { writeZip } from '../../lib/zip/write-zip.ts';
import { pollDeviceFlow, startDeviceFlow } from '../../cli/oauth.ts';
import { aDashboardWorld, type DashboardWorld, type Person } from './dashboard-world.ts';

let world: DashboardWorld;
let shot: ReturnType<typeof screenshotFolder>;
let ownerContext: BrowserContext;
let page: Page;
let pageErrors: string[];
const LIVE = 60_000;

before(async () => {
  world = await aDashboardWorld();
  shot = screenshotFolder('dashboard');
});
after(async () => {
  await world?.close();
});

async function signIn(context: BrowserContext, who: Person): Promise<Page> {
  const p = await context.newPage();
  await p.goto(`${world.platform.url}/`);
  // a busy CI machine can take longer than playwright's 30 s default to show the first page
  await p.getByLabel('Email').waitFor({ timeout: LIVE });
  await p.getByLabel('Email').fill(who.email);
  await p.getByLabel('Password').fill(who.password);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('link', { name: 'Runs' }).waitFor();
  return p;
}

/** Launched through the API, as an integrator elsewhere would. */
async function launchElsewhere(modelId?: string): Promise<string> {
  const res = await client(world.platform.url, { key: world.key }).post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'from elsewhere' }, ...(modelId ? { model_id: modelId } : {}) });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

/** The page's document as the focus checks read it (the tests are compiled without the DOM's types). */
type PageGlobals = { document: { activeElement: { tagName: string; closest(selector: string): unknown } | null } };

/** A run of the agent whose forecast call needs approval (the scripted model), launched elsewhere. */
async function launchGated(): Promise<string> {
  const res = await client(world.platform.url, { key: world.key }).post('/api/agents/@acme/forecaster/run', { input: {}, model_id: world.models.script });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

/** Opens the run's page (before its request exists) and waits for the pending call to appear live. */
async function pendingCallOn(p: Page, runId: string) {
  await p.goto(`${world.platform.url}/#/runs/${runId}`);
  await p.getByRole('heading', { name: /^Run / }).waitFor();
  const card = p.getByRole('region', { name: /^Pending approval apr_/ });
  await card.waitFor({ timeout: LIVE });
  return card;
}

/**
 * A page of another origin on the same site (another loopback port: the session cookie, SameSite=Lax,
 * is sent to the platform) tries to cancel a run with the owner's cookie: its fetch with the context
 * header fails the CORS preflight, and the request a form could make (no header of its own, a text
 * body) is refused (no X-Org-Id, not JSON): the run is still running.
 */
async function aForgedCancelFails(runId: string): Promise<void> {
  const other = createServer((_, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>elsewhere</title><p>elsewhere</p>'));
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  const forger = await ownerContext.newPage();
  try {
    await forger.goto(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`);
    const target = `${world.platform.url}/api/runs/${runId}/cancel`;
    const fetched = await forger.evaluate(async ([url, org, space]) => {
      try {
        const res = await fetch(url, { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json', 'x-org-id': org, 'x-space-id': space }, body: '{}' });
        return `answered ${res.status}`;
      } catch {
        return 'blocked';
      }
    }, [target, world.orgId, world.spaceId]);
    assert.equal(fetched, 'blocked');
    // what a form can send: a simple request, no header of its own, the answer unreadable
    const simple = await forger.evaluate(async (url) => {
      const res = await fetch(url, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: '{}' });
      return res.type;
    }, target);
    assert.equal(simple, 'opaque');
    assert.equal((await client(world.platform.url, { key: world.key }).get(`/api/runs/${runId}`)).body.status, 'running');
    // a write that needs no header nor JSON body (sign-out) is refused by its Origin: the owner stays signed in
    await forger.evaluate(async (url) => {
      await fetch(url, { method: 'POST', mode: 'no-cors', credentials: 'include' });
    }, `${world.platform.url}/api/auth/sign-out`);
    assert.equal(await page.evaluate(async () => (await fetch('/api/auth/session')).status), 200);
  } finally {
    await forger.close();
    await new Promise((r) => other.close(r));
  }
}

describe('the dashboard', () => {
  test('signs in with email and password and lands on the runs', async () => {
    ownerContext = await world.browser.newContext();
    const first = await ownerContext.newPage();
    pageErrors = watchPageErrors(first);
    await first.goto(`${world.platform.url}/`);
    await first.getByRole('button', { name: 'Sign in' }).waitFor();
    await assertAccessible(first, 'sign-in');
    await shot(first, 'sign-in');
    await first.getByLabel('Email').fill(world.owner.email);
    await first.getByLabel('Password').fill('not the password');
    await first.getByRole('button', { name: 'Sign in' }).click();
    // the problem document's title, detail and request id are shown
    const problem = first.getByRole('alert');
    await problem.waitFor();
    assert.match(await problem.innerText(), /Request id: req_/);
    await first.getByLabel('Password').fill(world.owner.password);
    await first.getByRole('button', { name: 'Sign in' }).click();
    await first.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    page = first;
    assert.equal(await page.getByLabel('Organization').inputValue(), world.orgId);
    assert.equal(await page.getByLabel('Space').inputValue(), world.spaceId);
  });

  test('signs in through the OpenID Connect provider the instance offers', async () => {
    const context = await world.browser.newContext();
    try {
      const p = await context.newPage();
      await p.goto(`${world.platform.url}/`);
      await p.getByRole('link', { name: `Sign in with ${world.socialName}` }).click();
      await p.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
      assert.equal(new URL(p.url()).origin, world.platform.url, 'back on the dashboard');
      assert.match(await p.getByText('owner@example.test').first().innerText(), /owner@example\.test/);
      assert.equal(await p.getByLabel('Organization').inputValue(), world.orgId);
    } finally {
      await context.close();
    }
  });

  test('a run launched elsewhere appears on the runs page and reaches success without a reload', async () => {
    await page.getByText('Live: updates as runs change').waitFor({ timeout: LIVE });
    const runId = await launchElsewhere();
    const row = page.locator(`tr[data-run="${runId}"]`);
    await row.waitFor({ timeout: LIVE });
    await row.getByText('success').waitFor({ timeout: LIVE });
    assert.match(await row.innerText(), /API key/);
    await assertAccessible(page, 'runs');
    await shot(page, 'runs');
  });

  test('launches the agent from the form made from its input schema and follows the run to success', async () => {
    await page.getByRole('link', { name: 'Agents' }).click();
    await page.getByRole('link', { name: 'Echo' }).click();
    await page.getByRole('heading', { name: 'Run this agent' }).waitFor();
    await page.getByText('Ready to launch').waitFor();
    await assertAccessible(page, 'agent');
    await shot(page, 'agent');
    const message = page.getByRole('region', { name: 'Run this agent' }).getByLabel('message (required)');
    assert.equal(await message.getAttribute('required'), '');
    await message.fill('hello from the dashboard');
    await page.getByRole('button', { name: 'Launch run' }).click();
    await page.getByTestId('run-status').getByText('success').waitFor({ timeout: LIVE });
    const runId = new URL(page.url()).hash.split('/')[2];
    const recorded = (await client(world.platform.url, { key: world.key }).get(`/api/runs/${runId}`)).body;
    assert.deepEqual(recorded.input, { message: 'hello from the dashboard' }, 'the form sent the input as typed');
    assert.deepEqual(JSON.parse(await page.getByTestId('run-output').innerText()), recorded.result.output);
    assert.equal(typeof recorded.result.output.echo, 'string');
    await page.locator('.logs li').first().waitFor();
    await assertAccessible(page, 'run');
    await shot(page, 'run-success');
  });

  test('a member without runs:cancel sees no cancel button, and the API refuses the cancel', async () => {
    const runId = await launchElsewhere(world.models.hang);
    await waitForStatus(client(world.platform.url, { key: world.key }), runId, (s) => s === 'running', LIVE);
    const memberContext = await world.browser.newContext();
    try {
      const member = await signIn(memberContext, world.auditor);
      await member.goto(`${world.platform.url}/#/runs/${runId}`);
      await member.getByTestId('run-status').getByText('running').waitFor();
      assert.equal(await member.getByRole('button', { name: 'Cancel run' }).count(), 0);
      assert.equal(await member.getByRole('link', { name: 'API keys' }).count(), 0);
      await shot(member, 'run-as-member');
      const refused = await client(world.platform.url, { cookie: world.auditor.cookie, org: world.orgId, space: world.spaceId }).post(`/api/runs/${runId}/cancel`, {});
      assert.equal(refused.status, 403, refused.text);
      assert.equal(refused.body.code, 'forbidden');
    } finally {
      await memberContext.close();
    }
    await aForgedCancelFails(runId);
    // the owner cancels it, after a confirmation
    await page.goto(`${world.platform.url}/#/runs/${runId}`);
    await page.getByTestId('run-status').getByText('running').waitFor();
    await page.getByRole('button', { name: 'Cancel run' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await assertAccessible(page, 'cancel confirmation');
    await dialog.getByRole('button', { name: 'Cancel run' }).click();
    await page.getByTestId('run-status').getByText('cancelled').waitFor({ timeout: LIVE });
    await shot(page, 'run-cancelled');
  });

  test('a tool call waiting for approval appears live with its tool and arguments as text; approved after a confirmation, the run reaches success live', async () => {
    const runId = await launchGated();
    const card = await pendingCallOn(page, runId);
    assert.equal(await card.getByTestId('approval-tool').innerText(), 'public_weather__forecast');
    // the arguments are text: the markup in them is shown, not made into elements
    const args = card.getByTestId('approval-arguments');
    assert.deepEqual(JSON.parse(await args.innerText()), { city: '<b>Oslo</b>' });
    assert.equal(await args.locator('b').count(), 0);
    assert.deepEqual(world.weather.calls, [], 'the upstream waits for the decision');
    await assertAccessible(page, 'run awaiting approval');
    await shot(page, 'run-awaiting-approval');

    // a member without runs:approve sees the request but no decision (and the API refuses one)
    const memberContext = await world.browser.newContext();
    try {
      const member = await signIn(memberContext, world.auditor);
      const seen = await pendingCallOn(member, runId);
      assert.match(await seen.innerText(), /Your role here cannot decide on it/);
      assert.equal(await member.getByRole('button', { name: 'Approve' }).count(), 0);
      assert.equal(await member.getByRole('button', { name: 'Reject' }).count(), 0);
      const approvalId = (await seen.getAttribute('data-approval'))!;
      const refused = await client(world.platform.url, { cookie: world.auditor.cookie, org: world.orgId, space: world.spaceId })
        .post(`/api/runs/${runId}/approvals/${approvalId}`, { decision: 'approve' });
      assert.deepEqual([refused.status, refused.body.code], [403, 'forbidden'], refused.text);
    } finally {
      await memberContext.close();
    }

    await card.getByRole('button', { name: 'Approve' }).click();
    const dialog = page.getByRole('dialog', { name: 'Approve' });
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /public_weather__forecast/);
    await assertAccessible(page, 'approve confirmation');
    await dialog.getByLabel('Reason (optional)').fill('checked the city');
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await page.getByTestId('run-status').getByText('success').waitFor({ timeout: LIVE });
    assert.deepEqual(JSON.parse(await page.getByTestId('run-output').innerText()), { forecast: 'Sunny in <b>Oslo</b>' });
    await page.getByRole('list', { name: 'Decided approvals' }).getByText('approved').waitFor();
    assert.equal(await page.getByRole('region', { name: /^Pending approval/ }).count(), 0);
    assert.deepEqual(world.weather.calls, ['<b>Oslo</b>']);
    const [decided] = (await client(world.platform.url, { key: world.key }).get(`/api/runs/${runId}/approvals`)).body.data;
    assert.deepEqual([decided.status, decided.reason], ['approved', 'checked the city']);
    await shot(page, 'run-approved');
  });

  test('a tool call rejected with a reason is refused to the agent, which goes on to success with the refusal', async () => {
    const runId = await launchGated();
    const card = await pendingCallOn(page, runId);
    await card.getByRole('button', { name: 'Reject' }).click();
    const dialog = page.getByRole('dialog', { name: 'Reject' });
    await dialog.getByLabel('Reason (optional)').fill('not today');
    await shot(page, 'reject-confirmation');
    await dialog.getByRole('button', { name: 'Reject' }).click();
    await page.getByTestId('run-status').getByText('success').waitFor({ timeout: LIVE });
    assert.match(await page.getByRole('list', { name: 'Decided approvals' }).innerText(), /public_weather__forecast: rejected .*\(reason: not today\)/);
    assert.match(JSON.parse(await page.getByTestId('run-output').innerText()).forecast, /rejected.*not today/);
    assert.deepEqual(world.weather.calls, ['<b>Oslo</b>'], 'the rejected call never reached the upstream');
    await assertAccessible(page, 'run with a rejected call');
  });

  test('reruns a failed run: the new run names the one it reran', async () => {
    // the provider is down while the run works, and back before the rerun (a rerun keeps the run's
    // model, so a run failed by its model's own answers would fail again)
    world.fake.setOutage(true);
    let failed: string;
    try {
      failed = await launchElsewhere();
      await waitForStatus(client(world.platform.url, { key: world.key }), failed, (s) => s === 'failed', LIVE);
    } finally {
      world.fake.setOutage(false);
    }
    await page.goto(`${world.platform.url}/#/runs/${failed}`);
    await page.getByRole('region', { name: 'Error' }).waitFor();
    await shot(page, 'run-failed');
    await page.getByRole('button', { name: 'Rerun' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rerun' }).click();
    await page.getByText(`rerun of ${failed}`).waitFor({ timeout: LIVE });
    await page.getByTestId('run-status').getByText('success').waitFor({ timeout: LIVE });
  });

  test('schedules the agent and shows its cron in words and its next fires', async () => {
    await page.goto(`${world.platform.url}/#/agents/@fixtures/agent-echo`);
    await page.getByText('New schedule').click();
    await page.getByLabel('Schedule name').fill('Weekday mornings');
    await page.getByLabel('Cron (5 fields)').fill('0 9 * * 1-5');
    await page.getByLabel('Time zone (IANA)').fill('Europe/Paris');
    await page.locator('#schedule-input-message').fill('good morning');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await page.getByRole('heading', { name: 'Schedule Weekday mornings' }).waitFor();
    await page.getByText('At 09:00, Monday through Friday (Europe/Paris time)').waitFor();
    const fires = page.getByRole('list', { name: 'Next fires' }).locator('li');
    assert.equal(await fires.count(), 5);
    assert.match(await page.getByTestId('schedule-state').innerText(), /enabled/);
    await assertAccessible(page, 'schedule');
    await shot(page, 'schedule');
    // disabling sends the ETag it read; the page shows the new state
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByTestId('schedule-state').getByText('disabled').waitFor();
    // edited with the ETag it read
    const scheduleId = new URL(page.url()).hash.split('/')[2];
    const asOwner = client(world.platform.url, { key: world.key });
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.locator('#edit-cron').fill('30 7 * * *');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('#edit-cron').waitFor({ state: 'detached' });
    assert.equal((await asOwner.get(`/api/schedules/${scheduleId}`)).body.cron_expression, '30 7 * * *');
    // a change made elsewhere meanwhile: the page's write is refused (412) and shown, not applied over it
    const read = await asOwner.get(`/api/schedules/${scheduleId}`);
    const renamed = await asOwner.patch(`/api/schedules/${scheduleId}`, { name: 'Renamed elsewhere' }, { headers: { 'if-match': read.headers.get('etag')! } });
    assert.equal(renamed.status, 200, renamed.text);
    await page.getByRole('button', { name: 'Enable' }).click();
    const conflict = page.getByRole('alert');
    await conflict.waitFor();
    assert.match(await conflict.innerText(), /precondition_failed/);
    assert.equal((await asOwner.get(`/api/schedules/${scheduleId}`)).body.enabled, false, 'the stale enable was not applied');
    await conflict.getByRole('button', { name: 'Dismiss' }).click();
    await page.getByRole('heading', { name: 'Schedule Renamed elsewhere' }).waitFor();
    await page.getByRole('link', { name: 'Schedules' }).click();
    await page.getByRole('link', { name: 'Renamed elsewhere' }).waitFor();
    await assertAccessible(page, 'schedules');
    await shot(page, 'schedules');
  });

  test('creates an API key and shows it once', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Key name').fill('from the dashboard');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByTestId('shown-once');
    await shown.waitFor();
    const key = (await shown.locator('code').innerText()).trim();
    assert.match(key, /^apst_[A-Za-z0-9]{36}$/);
    await assertAccessible(page, 'api keys');
    await shot(page, 'api-key-created');
    // the key works, and once dismissed it is nowhere on the page
    assert.equal((await client(world.platform.url, { key }).get('/api/runs')).status, 200);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await page.reload();
    await page.getByRole('cell', { name: 'from the dashboard', exact: true }).waitFor();
    assert.ok(!(await page.content()).includes(key));
  });

  test('creates a webhook (its signing secret shown once) and shows its deliveries with every attempt', async () => {
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.getByLabel('Endpoint URL').fill(world.hooks.url);
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const secret = (await page.getByRole('region', { name: 'New webhook signing secret' }).getByTestId('shown-once').locator('code').innerText()).trim();
    assert.match(secret, /^whsec_/);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    const received = world.hooks.received.length;
    const runId = await launchElsewhere();
    await waitForStatus(client(world.platform.url, { key: world.key }), runId, (x) => x === 'success', LIVE);
    const deadline = Date.now() + LIVE;
    while (world.hooks.received.length === received && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.ok(world.hooks.received.length > received, 'the webhook was delivered');
    await page.getByRole('button', { name: 'Deliveries' }).click();
    await page.getByText(/^attempt 1 at .+: 204, \d+ ms$/).first().waitFor();
    assert.match(await page.locator('.deliveries > li').first().innerText(), /run\.success succeeded, 1 attempt\(s\)/);
    assert.ok(!(await page.content()).includes(secret), 'the secret is gone once dismissed');
    await assertAccessible(page, 'webhook deliveries');
    await shot(page, 'webhook-deliveries');
  });

  test('an agent missing a connection shows it before launch with a connect link; the hosted connect flow connects it; one needing reconnection is shown so, with Reconnect', async () => {
    const zip = (manifest: Record<string, unknown>) => writeZip(new Map([['manifest.json', Buffer.from(JSON.stringify(manifest))], ['prompt.md', Buffer.from('Ask the CRM.')]]));
    await importPackage(world.platform.url, world.key, zip({
      name: '@acme/crm', version: '1.0.0', type: 'integration', schema_version: '0.3', display_name: 'Acme CRM', source: { kind: 'none' }, default_tools: ['api_call'],
      auths: { key: {
        type: 'api_key', credentials: { schema: { type: 'object', properties: { api_key: { type: 'string', minLength: 4 } }, required: ['api_key'] } },
        authorized_uris: ['http://127.0.0.1:9/api/*'], delivery: { http: { in: 'header', name: 'X-Api-Key', value: '{$credential.api_key}' } },
      } },
    }));
    await importPackage(world.platform.url, world.key, zip({
      name: '@acme/crm-reader', version: '1.0.0', type: 'agent', schema_version: '0.3', display_name: 'CRM reader',
      dependencies: { integrations: { '@acme/crm': '*' } }, integrations_configuration: { '@acme/crm': { tools: ['api_call'] } },
    }));
    await page.goto(`${world.platform.url}/#/agents/@acme/crm-reader`);
    const problems = page.getByRole('region', { name: 'Readiness problems' });
    await problems.waitFor();
    assert.match(await problems.innerText(), /@acme\/crm: no connection/);
    await assertAccessible(page, 'agent not ready');
    await shot(page, 'agent-not-ready');
    const [connectPage] = await Promise.all([ownerContext.waitForEvent('page'), problems.getByRole('button', { name: 'Connect @acme/crm' }).click()]);
    await connectPage.getByLabel('api_key').fill('crm-key-1234');
    await connectPage.getByRole('button', { name: 'Connect' }).click();
    await connectPage.getByRole('heading', { name: 'Connected' }).waitFor();
    await connectPage.close();

    await page.getByRole('link', { name: 'Connections', exact: true }).click();
    const card = page.getByRole('region', { name: /Acme CRM/ });
    await card.getByText(/— connected/).waitFor({ timeout: LIVE });
    const pool = new pg.Pool({ connectionString: world.platform.db.url, max: 1 });
    try {
      await pool.query(`UPDATE integration_connections SET needs_reconnection = true WHERE integration_package_id = '@acme/crm'`);
    } finally {
      await pool.end();
    }
    await page.reload();
    await card.getByText('— needs reconnection').waitFor();
    assert.equal(await card.getByRole('button', { name: 'Reconnect @acme/crm' }).count(), 1);
    await assertAccessible(page, 'connections');
    await shot(page, 'connection-needs-reconnection');
    await page.goto(`${world.platform.url}/#/agents/@acme/crm-reader`);
    assert.match(await page.getByRole('region', { name: 'Readiness problems' }).innerText(), /its connection needs reconnecting/);
    await page.getByRole('region', { name: 'Readiness problems' }).getByRole('button', { name: 'Reconnect @acme/crm' }).waitFor();
  });

  test('admin: members with their organization and space roles, models with the default and credentials (keys never shown), an OAuth client made with its secret shown once', async () => {
    await page.getByRole('link', { name: 'Members', exact: true }).click();
    await page.getByLabel('Space role of auditor@example.test').waitFor();
    assert.equal(await page.getByLabel('Space role of auditor@example.test').inputValue(), 'auditor');
    assert.equal(await page.getByLabel('Organization role of owner@example.test').inputValue(), 'owner');
    // a space role changed from the page is the API's
    const spaceRoleOf = async () => (await client(world.platform.url, { cookie: world.owner.cookie, org: world.orgId, space: world.spaceId })
      .get(`/api/spaces/${world.spaceId}/members`)).body.data.find((m: { email: string }) => m.email === world.auditor.email).role_key;
    await page.getByLabel('Space role of auditor@example.test').selectOption('viewer');
    for (let i = 0; i < 50 && (await spaceRoleOf()) !== 'viewer'; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await spaceRoleOf(), 'viewer');
    await page.getByLabel('Space role of auditor@example.test').selectOption('auditor');
    for (let i = 0; i < 50 && (await spaceRoleOf()) !== 'auditor'; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await spaceRoleOf(), 'auditor');
    await page.getByRole('link', { name: 'Models', exact: true }).click();
    await page.getByRole('cell', { name: 'fake (default)' }).waitFor();
    await page.getByRole('cell', { name: 'fake-script', exact: true }).waitFor();
    await page.getByText('fake fake-script — openai-compatible at').waitFor();
    assert.ok(!(await page.content()).includes('sk-fake-provider-key'), 'a provider key is never shown back');
    await page.getByRole('link', { name: 'OAuth clients', exact: true }).click();
    await page.getByLabel('Client name').fill('Partner app');
    await page.getByLabel('Redirect URI').fill('https://partner.example.test/callback');
    await page.getByRole('button', { name: 'Create client' }).click();
    const secret = (await page.getByRole('region', { name: 'New client secret' }).getByTestId('shown-once').locator('code').innerText()).trim();
    assert.ok(secret.length >= 20, secret);
    await page.getByRole('cell', { name: 'Partner app', exact: true }).waitFor();
    await page.getByRole('button', { name: 'I have copied it' }).click();
    assert.ok(!(await page.content()).includes(secret));
  });

  test('every other page renders without an accessibility violation', async () => {
    for (const [link, label] of [['Connections', 'connections'], ['Webhooks', 'webhooks'], ['Members', 'members'], ['Models', 'models'], ['OAuth clients', 'oauth-clients'], ['Agents', 'agents']]) {
      await page.getByRole('link', { name: link, exact: true }).click();
      await page.getByRole('heading', { name: link, level: 1 }).waitFor();
      await page.locator('main:has-text("Loading")').waitFor({ state: 'detached' });
      await assertAccessible(page, label);
      await shot(page, label);
    }
    assert.deepEqual(pageErrors, [], 'no CSP refusal and no uncaught error on any page');
  });

  test('filters the runs by status and by agent', async () => {
    await page.goto(`${world.platform.url}/#/runs`);
    await page.getByText('Live: updates as runs change').waitFor({ timeout: LIVE });
    const rows = page.locator('tr[data-run]');
    /** the rows' texts once `shown` holds of them (the list is read again after a filter changes) */
    const rowsWhen = async (column: string, shown: (texts: string[]) => boolean) => {
      const deadline = Date.now() + LIVE;
      for (;;) {
        const texts = (await rows.locator(column).allInnerTexts()).map((x) => x.trim());
        if (shown(texts)) return texts;
        if (Date.now() > deadline) throw new Error(`rows never matched: ${texts.join(', ')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await page.getByLabel('Status', { exact: true }).selectOption('failed');
    await page.waitForURL(/status=failed/);
    await rowsWhen('.status', (texts) => texts.length >= 1 && texts.every((x) => x.endsWith('failed')));
    await page.getByLabel('Status', { exact: true }).selectOption('');
    await page.getByLabel('Agent', { exact: true }).selectOption('@acme/forecaster');
    await page.waitForURL((u) => !u.hash.includes('status=') && u.hash.includes('agent='));
    // the agent's two runs (approved, rejected), and no other
    await rowsWhen('td:nth-child(3)', (texts) => texts.length === 2 && texts.every((x) => x.startsWith('@acme/forecaster')));
    assert.deepEqual(await page.locator('table.runs thead th').allInnerTexts(), ['Run', 'Status', 'Agent', 'Trigger', 'Created', 'Duration', 'Cost']);
    // newest first
    const listed = (await client(world.platform.url, { key: world.key }).get('/api/agents/@acme/forecaster/runs')).body.data as { id: string; createdAt: string }[];
    assert.ok(Date.parse(listed[0].createdAt) >= Date.parse(listed[1].createdAt));
    assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-run'))), listed.map((r) => r.id));
    await shot(page, 'runs-filtered');
  });

  test('imports a package dropped on the agents page; its form has enums as choices, types, and the field this space locked shown locked', async () => {
    const manifest = {
      name: '@acme/dropped', version: '2.0.0', type: 'agent', schema_version: '0.3', display_name: 'Dropped agent',
      input: { schema: { type: 'object', required: ['city'], properties: {
        city: { type: 'string', enum: ['Oslo', 'Lima'] }, days: { type: 'integer' }, detailed: { type: 'boolean' }, units: { type: 'string' },
      } } },
    };
    const archive = writeZip(new Map([['manifest.json', Buffer.from(JSON.stringify(manifest))], ['prompt.md', Buffer.from('Answer.')]])).toString('base64');
    await page.getByRole('link', { name: 'Agents', exact: true }).click();
    await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
    const files = await page.evaluateHandle((b64) => {
      const transfer = new (globalThis as unknown as { DataTransfer: new () => { items: { add(file: File): void } } }).DataTransfer();
      transfer.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], 'dropped.afps', { type: 'application/zip' }));
      return transfer;
    }, archive);
    await page.locator('.dropzone').dispatchEvent('drop', { dataTransfer: files });
    await page.getByText('Imported @acme/dropped 2.0.0.').waitFor();
    const asOwner = client(world.platform.url, { key: world.key });
    const locked = await asOwner.put('/api/agents/@acme/dropped/config', { locked_input: { units: 'metric' } });
    assert.equal(locked.status, 200, locked.text);
    await page.getByRole('link', { name: 'Dropped agent' }).click();
    const form = page.getByRole('region', { name: 'Run this agent' });
    await form.waitFor();
    const city = form.getByLabel('city (required)');
    await city.waitFor();
    assert.deepEqual(await city.locator('option').allInnerTexts(), ['Oslo', 'Lima']);
    assert.equal(await form.getByLabel('days').getAttribute('type'), 'number');
    assert.equal(await form.getByLabel('detailed').getAttribute('type'), 'checkbox');
    const units = form.getByLabel('units (locked by this space)');
    assert.equal(await units.inputValue(), 'metric');
    assert.equal(await units.isDisabled(), true);
    // its versions and dist-tags
    await page.getByRole('table', { name: 'Published versions' }).getByRole('cell', { name: '2.0.0', exact: true }).waitFor();
    await page.getByRole('listitem').filter({ hasText: /^latest → 2\.0\.0/ }).waitFor();
    await page.getByLabel('Tag', { exact: true }).fill('beta');
    await page.getByRole('button', { name: 'Point tag' }).click();
    await page.getByRole('listitem').filter({ hasText: /^beta → 2\.0\.0/ }).waitFor();
    await assertAccessible(page, 'dropped agent');
    await shot(page, 'agent-enum-locked');
    await city.selectOption('Lima');
    await page.getByRole('button', { name: 'Launch run' }).click();
    await page.getByTestId('run-status').waitFor();
    const runId = new URL(page.url()).hash.split('/')[2];
    const recorded = (await asOwner.get(`/api/runs/${runId}`)).body;
    assert.equal(recorded.input.city, 'Lima');
    assert.equal(recorded.input.units, 'metric', 'the locked value is the one the run gets');
  });

  test('the keyboard alone: the skip link moves focus to the page, a confirmation opens with Enter and Escape closes it unchanged', async () => {
    const runs = (await client(world.platform.url, { key: world.key }).get('/api/runs?status=failed&limit=1')).body.data;
    await page.goto(`${world.platform.url}/#/runs/${runs[0].id}`);
    await page.getByRole('button', { name: 'Rerun' }).waitFor();
    await page.getByRole('link', { name: 'Skip to content' }).focus();
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.tagName), 'H1');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => Boolean((globalThis as unknown as PageGlobals).document.activeElement?.closest('main'))), true, 'Tab goes on inside the page');
    await page.getByRole('button', { name: 'Rerun' }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Rerun' });
    await dialog.waitFor();
    assert.equal(await page.evaluate(() => Boolean((globalThis as unknown as PageGlobals).document.activeElement?.closest('dialog'))), true, 'focus is inside the dialog');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(new URL(page.url()).hash, `#/runs/${runs[0].id}`, 'nothing was launched');
  });

  test('a permission withdrawn after the page was read: the refused write shows the 403 problem with its request id', async () => {
    const asOwner = client(world.platform.url, { cookie: world.owner.cookie, org: world.orgId, space: world.spaceId });
    const auditorId = (await asOwner.get(`/api/spaces/${world.spaceId}/members`)).body.data.find((m: { email: string }) => m.email === world.auditor.email).userId;
    const setRole = async (role_key: string) => {
      const res = await asOwner.patch(`/api/spaces/${world.spaceId}/members/${auditorId}`, { role_key });
      assert.ok(res.status === 200 || res.status === 204, res.text);
    };
    await setRole('runner');
    const launched = await client(world.platform.url, { cookie: world.auditor.cookie, org: world.orgId, space: world.spaceId })
      .post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'mine' }, model_id: world.models.hang });
    assert.equal(launched.status, 201, launched.text);
    const runId = launched.body.id;
    const memberContext = await world.browser.newContext();
    try {
      const member = await signIn(memberContext, world.auditor);
      await member.goto(`${world.platform.url}/#/runs/${runId}`);
      await member.getByRole('button', { name: 'Cancel run' }).waitFor();
      await setRole('auditor');
      await member.getByRole('button', { name: 'Cancel run' }).click();
      const dialog = member.getByRole('dialog');
      await dialog.getByRole('button', { name: 'Cancel run' }).click();
      const problem = dialog.getByRole('alert');
      await problem.waitFor();
      const text = await problem.innerText();
      assert.match(text, /forbidden/);
      assert.match(text, /Your role here does not allow this/);
      assert.match(text, /Request id: req_/);
      await shot(member, 'refused-403');
      assert.notEqual((await asOwner.get(`/api/runs/${runId}`)).body.status, 'cancelled');
    } finally {
      await memberContext.close();
      await asOwner.post(`/api/runs/${runId}/cancel`, {});
    }
  });

  test('a person signed in to the dashboard approves a device code (the CLI\'s login) on the instance\'s own pages in the same browser', async () => {
    const { discovery, start } = await startDeviceFlow(world.platform.url, ['runs:read']);
    const device = await ownerContext.newPage();
    try {
      await device.goto(start.verification_uri_complete!);
      // the pages in turn: confirm the code, continue as the signed-in person, allow; each a form POST of this origin
      const done = device.getByText('Your device is signed in');
      const steps: string[] = [];
      for (let i = 0; i < 6 && !(await done.isVisible()); i++) {
        await device.waitForLoadState();
        const heading = (await device.locator('h1').first().innerText().catch(() => '')).trim();
        steps.push(heading);
        const asOwner = device.getByRole('button', { name: `Continue as ${world.owner.email}` });
        const next = (await asOwner.count()) ? asOwner : (await device.getByRole('button', { name: 'Allow' }).count()) ? device.getByRole('button', { name: 'Allow' }) : device.getByRole('button', { name: 'Continue', exact: true });
        await Promise.all([device.waitForNavigation(), next.click()]);
      }
      assert.ok(await done.isVisible(), `pages walked: ${steps.join(' > ')}; last: ${await device.locator('body').innerText()}`);
    } finally {
      await device.close();
    }
    const tokens = await pollDeviceFlow(discovery, { ...start, interval: 1 });
    assert.ok(tokens.access_token);
  });

  test('the space switcher: another space shows its own runs (the requests carry its X-Space-Id), and back', async () => {
    const made = await client(world.platform.url, { cookie: world.owner.cookie, org: world.orgId }).post('/api/spaces', { name: 'Second space' });
    assert.equal(made.status, 201, made.text);
    await page.goto(`${world.platform.url}/#/runs`);
    await page.locator('tr[data-run]').first().waitFor();
    await page.reload();
    const sent: string[] = [];
    const seen = (req: { url(): string; headers(): Record<string, string> }) => {
      if (new URL(req.url()).pathname === '/api/runs') sent.push(req.headers()['x-space-id'] ?? '');
    };
    page.on('request', seen);
    try {
      await page.getByLabel('Space', { exact: true }).selectOption(made.body.id);
      await page.getByText('No runs here yet.').waitFor();
      assert.ok(sent.includes(made.body.id), JSON.stringify(sent));
      await page.getByLabel('Space', { exact: true }).selectOption(world.spaceId);
      await page.locator('tr[data-run]').first().waitFor();
    } finally {
      page.off('request', seen);
    }
  });

  test('an owner previews a lesser role: what that role may not do is hidden', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('button', { name: 'Create key' }).waitFor();
    await page.getByLabel('Preview as').selectOption('member:viewer');
    await page.getByRole('button', { name: 'Create key' }).waitFor({ state: 'detached' });
    await page.getByRole('cell', { name: 'from the dashboard', exact: true }).waitFor();
    await shot(page, 'preview-as-viewer');
    await page.getByLabel('Preview as').selectOption('');
    await page.getByRole('button', { name: 'Create key' }).waitFor();
  });
});
