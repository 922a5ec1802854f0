// An integration that declares no auths reaches the sidecar without a connection (authKey and
// connectionId null): the assignment takes it for a remote source only and with nothing to deliver,
// the platform is never asked to refresh it, and a source none one gets no api_call.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { parseAssignment, type IntegrationAssignment } from '../../sidecar/assignment.ts';
import { platformCredentialRefresh } from '../../sidecar/connection-refresh.ts';
import { integrationTools } from '../../sidecar/integration-tools.ts';

const base = {
  runId: 'run_1', eventsUrl: 'http://127.0.0.1:1/e', eventSecret: 'whsec_abcdefghij', token: 'a'.repeat(43),
  model: null, outputSchema: null, runtimeTools: [], heartbeatSeconds: 5,
};
const publicServer: IntegrationAssignment = {
  packageId: '@public/weather', toolPrefix: 'public_weather', tools: ['forecast'],
  source: { kind: 'remote', url: 'https://mcp.weather.example/mcp', transport: 'streamable-http' },
  authKey: null, connectionId: null, authorizedUris: [], delivery: null, credentials: {},
};

function parsed(entry: Record<string, unknown>) {
  return parseAssignment(JSON.stringify({ ...base, integrations: [entry] })).integrations;
}

describe('the assignment of an integration without a connection', () => {
  test('a remote one is read back as written', () => {
    assert.deepEqual(parsed({ ...publicServer }), [publicServer]);
  });

  test('refused: a source none one, half a connection, or anything to deliver', () => {
    const refusals: Array<[Record<string, unknown>, RegExp]> = [
      [{ source: { kind: 'none' }, tools: ['api_call'] }, /integrations\[0\]: only a remote source comes without a connection/],
      [{ connectionId: 'c0ffee00-0000-4000-8000-000000000001' }, /integrations\[0\]\.authKey must be a non-empty string, or null with connectionId/],
      [{ authKey: 'key' }, /integrations\[0\]\.connectionId must be a non-empty string, or null with authKey/],
      [{ credentials: { api_key: 'sk-stray' } }, /without a connection has no authType, delivery, authorizedUris or credentials/],
      [{ delivery: { in: 'header', name: 'X-Api-Key', value: '{$credential.api_key}' } }, /without a connection has no/],
      [{ authorizedUris: ['https://mcp.weather.example/*'] }, /without a connection has no/],
      [{ authType: 'oauth2' }, /without a connection has no/],
    ];
    for (const [change, message] of refusals) {
      assert.throws(() => parsed({ ...publicServer, ...change }), (err: Error) => {
        assert.match(err.message, message);
        assert.equal(err.message.includes('sk-stray'), false);
        return true;
      });
    }
  });
});

describe('the sidecar with an integration without a connection', () => {
  test('a refresh is answered no_connection without asking the platform', async (t) => {
    let asked = 0;
    const platform = createServer((req, res) => {
      asked += 1;
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ credentials: { access_token: 'x' } }));
    });
    await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => platform.close(() => resolve())));
    const connectionsUrl = `http://127.0.0.1:${(platform.address() as AddressInfo).port}/internal/runs/run_1/connections`;
    const refresh = platformCredentialRefresh(connectionsUrl, 'whsec_abcdefghij');
    assert.deepEqual(await refresh(publicServer), { ok: false, code: 'no_connection' });
    assert.equal(asked, 0);
    // the same function does ask for a connection the run bound: the server above is reachable
    assert.deepEqual(await refresh({ ...publicServer, authKey: 'oauth', connectionId: 'c0ffee00-0000-4000-8000-000000000001' }), { ok: true, credentials: { access_token: 'x' } });
    assert.equal(asked, 1);
  });

  test('a source none one offers no api_call: there is no credential to add', async () => {
    const withoutAuths = { ...publicServer, packageId: '@public/plain', toolPrefix: 'public_plain', tools: ['api_call'], source: { kind: 'none' as const } };
    const withAuth = { ...withoutAuths, packageId: '@acme/crm', toolPrefix: 'acme_crm', authKey: 'key', connectionId: 'c0ffee00-0000-4000-8000-000000000001' };
    const served = await integrationTools([withoutAuths, withAuth], { egress: { allowInternalHosts: [] } });
    assert.deepEqual(served.tools.map((tool) => tool.name), ['acme_crm__api_call']);
    await served.close();
  });
});
