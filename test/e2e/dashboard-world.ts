// The world the dashboard's browser tests share: one started platform (with its dashboard built by
// bin/start.mjs) on the scripted model, its owner, a member whose space role reads every run but
// may not cancel, the echo agent, and models that answer or hang (the model server can also be put in an outage); one Chromium.
// Agents of the scripted model ask a loopback MCP upstream's forecast, a call needing approval.
// Sign-in through an OpenID Connect provider (oauth2-mock-server on loopback) is enabled; it signs
// in as the owner.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OAuth2Server } from 'oauth2-mock-server';
import type { Browser } from 'playwright-core';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { importForecastAgent, importWeatherIntegration, startWeatherUpstream, type WeatherUpstream } from '../support/approval-agent.ts';
import { launchChromium } from '../support/browser.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';

export interface Person {
  email: string;
  password: string;
  cookie: string;
}

export interface DashboardWorld {
  platform: PlatformProcess;
  fake: FakeModel;
  browser: Browser;
  orgId: string;
  spaceId: string;
  owner: Person;
  /** the MCP upstream of the gated forecast tool */
  weather: WeatherUpstream;
  /** holds runs:read-all but neither runs:cancel nor runs:approve in the space */
  auditor: Person;
  /** the owner's API key in the space, for launches made "elsewhere" */
  key: string;
  /** a webhook receiver on loopback: its URL and the events it received */
  hooks: { url: string; received: string[] };
  /** the name of the OpenID Connect provider the sign-in page offers */
  socialName: string;
  /** hang: never answers; script: the scripted model the approval agents need */
  models: { hang: string; script: string };
  close(): Promise<void>;
}

const PASSWORD = 'a long enough passphrase';
const SOCIAL_NAME = 'Acme ID';

async function aReceiver(): Promise<Server> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

/** An OpenID Connect provider on loopback that signs in as the owner (a verified address: the account is linked). */
async function anIdentityProvider(): Promise<OAuth2Server> {
  const idp = new OAuth2Server();
  await idp.issuer.keys.generate('RS256');
  await idp.start(0, '127.0.0.1');
  idp.issuer.url = `http://127.0.0.1:${idp.address().port}`;
  idp.service.on('beforeTokenSigning', (token: { payload: Record<string, unknown> }) => {
    if (token.payload.aud === 'dashboardclient') Object.assign(token.payload, { sub: 'acme-olive', email: 'owner@example.test', email_verified: true, name: 'Olive Owner' });
  });
  return idp;
}

export async function aDashboardWorld(): Promise<DashboardWorld> {
  const [fake, weather, idp, receiver] = await Promise.all([startFakeModel(), startWeatherUpstream(), anIdentityProvider(), aReceiver()]);
  const hooks = { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, received: [] as string[] };
  receiver.on('request', (req, res) => {
    hooks.received.push(String(req.headers['webhook-id'] ?? ''));
    req.resume();
    res.writeHead(204).end();
  });
  const stopReceiver = () => {
    receiver.closeAllConnections();
    return new Promise<void>((r) => receiver.close(() => r()));
  };
  let platform: PlatformProcess | undefined;
  let browser: Browser | undefined;
  try {
    const issuer = new URL(idp.issuer.url!);
    [platform, browser] = await Promise.all([
      startPlatformProcess({
        env: {
          SANDBOX_WARM_POOL: '2', EGRESS_ALLOW_INTERNAL_HOSTS: [new URL(fake.url).host, weather.host, issuer.host, new URL(hooks.url).host].join(','),
          AUTH_SOCIAL_ISSUER_URL: issuer.origin, AUTH_SOCIAL_CLIENT_ID: 'dashboardclient', AUTH_SOCIAL_CLIENT_SECRET: 'dashboard-client-secret', AUTH_SOCIAL_NAME: SOCIAL_NAME,
        },
      }),
      launchChromium(),
    ]);
    const anon = client(platform.url);
    const redeem = await anon.post('/api/auth/bootstrap/redeem', { token: 'process-bootstrap-token-0123456789', email: 'owner@example.test', password: PASSWORD, name: 'Olive Owner' });
    assert.equal(redeem.status, 201, redeem.text);
    const owner = { email: 'owner@example.test', password: PASSWORD, cookie: redeem.headers.get('set-cookie')!.split(';')[0] };
    const orgId = redeem.body.org_id as string;
    const spaceId = redeem.body.space_id as string;
    const asOwner = client(platform.url, { cookie: owner.cookie, org: orgId, space: spaceId });
    const keyRes = await asOwner.post('/api/api-keys', { name: 'elsewhere' });
    assert.equal(keyRes.status, 201, keyRes.text);
    const key = keyRes.body.key as string;
    await aDefaultModel(platform.url, key, fake.url);
    const hang = await aDefaultModel(platform.url, key, fake.url, 'fake-hang');
    const script = await aDefaultModel(platform.url, key, fake.url, 'fake-script');
    // the last one made is the default: the answering model again
    const models = await client(platform.url, { key }).get('/api/models');
    const answering = models.body.data.find((m: { model: string }) => m.model === 'fake').id;
    assert.equal((await client(platform.url, { key }).patch(`/api/models/${answering}`, { is_default: true })).status, 200);
    await importFixture(platform.url, key, 'agent-echo');
    await importWeatherIntegration(platform.url, key, weather);
    await importForecastAgent(platform.url, key, '@acme/forecaster', '<b>Oslo</b>');

    const auditor = await aMemberWithRole(platform.url, asOwner, orgId, spaceId);
    return {
      platform, fake, weather, hooks, socialName: SOCIAL_NAME, browser, orgId, spaceId, owner, auditor, key, models: { hang, script },
      async close() {
        await browser?.close().catch(() => undefined);
        await platform?.stop();
        await fake.close();
        await weather.close();
        await idp.stop();
        await stopReceiver();
      },
    };
  } catch (err) {
    await browser?.close().catch(() => undefined);
    await platform?.stop();
    await fake.close();
    await weather.close();
    await idp.stop();
    await stopReceiver();
    throw err;
  }
}

/** Invited, signed up, joined, and given an organization-defined role without runs:cancel. */
async function aMemberWithRole(base: string, asOwner: ReturnType<typeof client>, orgId: string, spaceId: string): Promise<Person> {
  const email = 'auditor@example.test';
  const invitation = await asOwner.post(`/api/orgs/${orgId}/invitations`, { email, role: 'member' });
  assert.equal(invitation.status, 201, invitation.text);
  const signUp = await client(base).post('/api/auth/sign-up/email', { email, password: PASSWORD, name: 'Ada Auditor' });
  assert.equal(signUp.status, 201, signUp.text);
  const cookie = signUp.headers.get('set-cookie')!.split(';')[0];
  const accepted = await client(base, { cookie }).post(`/api/invitations/${invitation.body.token}/accept`);
  assert.equal(accepted.status, 200, accepted.text);
  const role = await asOwner.post(`/api/orgs/${orgId}/roles`, { key: 'auditor', name: 'Auditor', permissions: ['runs:read', 'runs:read-all', 'agents:read', 'schedules:read', 'spaces:read'] });
  assert.equal(role.status, 201, role.text);
  const joined = await asOwner.post(`/api/spaces/${spaceId}/members`, { userId: signUp.body.user.id, role_key: 'auditor' });
  assert.equal(joined.status, 201, joined.text);
  return { email, password: PASSWORD, cookie };
}
