import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  authorizeCredentialTarget,
  carriesSecret,
  deliveryHeader,
  literalAuthorizedHosts,
  scrubSecrets,
  secretValues,
} from '../../lib/afps/credential-delivery.ts';
import { parseAssignment } from '../../sidecar/assignment.ts';

const creds = { api_key: 'sk-secret-123456', subdomain: 'acme', session: 'sess-abcdef' };

describe('credential delivery', () => {
  test('deliveryHeader fills the templates after the prefix, and gives nothing half-filled', () => {
    assert.deepEqual(deliveryHeader({ in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.api_key}' }, creds), [
      'Authorization',
      'Bearer sk-secret-123456',
    ]);
    assert.deepEqual(deliveryHeader({ in: 'header', name: 'Cookie', prefix: 'sid=', value: '{$credential.session}; v=1' }, creds), ['Cookie', 'sid=sess-abcdef; v=1']);
    assert.equal(deliveryHeader({ in: 'header', name: 'X-Key', value: '{$credential.missing}' }, creds), null);
    assert.equal(deliveryHeader({ in: 'header', name: 'X-Key', value: '{$credential.api_key}' }, { api_key: 'a\r\nInjected: 1' }), null);
    assert.equal(deliveryHeader(null, creds), null);
  });

  test('authorizeCredentialTarget: ok only under an entry that fixes the host', () => {
    const uris = ['https://api.acme.com/v1/*', 'https://{$credential.subdomain}.zendesk.com/api/*', 'https://*.files.acme.com/*'];
    assert.equal(authorizeCredentialTarget(uris, creds, 'https://api.acme.com/v1/users?page=2'), 'ok');
    assert.equal(authorizeCredentialTarget(uris, creds, 'https://acme.zendesk.com/api/tickets'), 'ok');
    assert.equal(authorizeCredentialTarget(uris, creds, 'https://api.acme.com/v2/users'), 'unauthorized_target');
    assert.equal(authorizeCredentialTarget(uris, creds, 'https://api.acme.com:8443/v1/users'), 'unauthorized_target');
    assert.equal(authorizeCredentialTarget(uris, creds, 'https://other.zendesk.com/api/tickets'), 'unauthorized_target');
    assert.equal(authorizeCredentialTarget(uris, creds, 'https://api.acme.com.evil.com/v1/x'), 'unauthorized_target');
    assert.equal(authorizeCredentialTarget(uris, creds, 'not a url'), 'unauthorized_target');
    assert.equal(authorizeCredentialTarget([], creds, 'https://api.acme.com/v1/x'), 'unauthorized_target');
    // a wildcard host lets the caller pick the host
    assert.equal(authorizeCredentialTarget(uris, creds, 'https://mine.files.acme.com/x'), 'credential_exfiltration_refused');
    // a field value that turns the rendered host into a wildcard is no binding either
    assert.equal(authorizeCredentialTarget(uris, { ...creds, subdomain: '*' }, 'https://evil.zendesk.com/api/x'), 'credential_exfiltration_refused');
    // the URL carrying a secret, as written or encoded; user information in the URL
    assert.equal(authorizeCredentialTarget(uris, creds, 'https://api.acme.com/v1/x?k=sk-secret-123456'), 'credential_exfiltration_refused');
    assert.equal(authorizeCredentialTarget(uris, creds, 'https://api.acme.com/v1/x?k=sk%2Dsecret%2D123456'), 'credential_exfiltration_refused');
    assert.equal(authorizeCredentialTarget(uris, creds, 'https://u:p@api.acme.com/v1/x'), 'credential_exfiltration_refused');
    // the value rendered into an authorized URL is not a secret there
    assert.equal(authorizeCredentialTarget(['https://api.acme.com/{$credential.subdomain}/*'], creds, 'https://api.acme.com/acme/x'), 'ok');
  });

  test('secrets are found and scrubbed in their encoded forms; short and rendered values are not secrets', () => {
    const secrets = secretValues({ ...creds, pin: '12' }, ['https://{$credential.subdomain}.zendesk.com/*']);
    assert.deepEqual(secrets, ['sk-secret-123456', 'sess-abcdef']);
    assert.equal(carriesSecret('x=sk-secret-123456', secrets), true);
    assert.equal(carriesSecret('nothing here', secrets), false);
    const b64 = Buffer.from('sess-abcdef').toString('base64');
    assert.equal(scrubSecrets(`a sk-secret-123456 b ${encodeURIComponent('sess-abcdef')} ${b64}`, secrets), 'a [redacted] b [redacted] [redacted]');
  });

  test('only hosts named without wildcard or template may be internal', () => {
    assert.deepEqual(literalAuthorizedHosts(['http://127.0.0.1:9/*', 'https://*.acme.com/*', 'https://{$credential.h}.acme.com/*', 'http://[::1]:8/a/{$credential.x}/*']), [
      '127.0.0.1',
      '::1',
    ]);
  });
});

describe('the sidecar assignment integrations', () => {
  const base = {
    runId: 'run_1', eventsUrl: 'http://127.0.0.1:1/e', eventSecret: 'whsec_abcdefghij', token: 'a'.repeat(43),
    model: null, outputSchema: null, runtimeTools: [], heartbeatSeconds: 5,
  };
  const integration = {
    packageId: '@acme/crm', toolPrefix: 'acme_crm', tools: ['api_call'], source: { kind: 'none' }, authKey: 'default',
    connectionId: 'c1', authorizedUris: ['https://api.acme.com/*'], delivery: null, credentials: { api_key: 'very-secret-value' },
  };

  test('absent means none; entries are checked with messages naming fields, never values', () => {
    assert.deepEqual(parseAssignment(JSON.stringify(base)).integrations, []);
    assert.deepEqual(parseAssignment(JSON.stringify({ ...base, integrations: [integration] })).integrations, [integration]);
    // a local server's credential, for the egress proxy to put on its requests (delivery.http)
    const local = { ...integration, source: { kind: 'local', command: ['node', 'server.cjs'] } };
    assert.deepEqual(parseAssignment(JSON.stringify({ ...base, integrations: [local] })).integrations, [local]);
    const refusals: Array<[Record<string, unknown>, RegExp]> = [
      [{ tools: [] }, /integrations\[0\]\.tools is empty \(no_tools_selected\)/],
      [{ source: { kind: 'stdio', command: ['x'] } }, /integrations\[0\]\.source\.kind/],
      [{ source: { kind: 'remote', url: 'ftp://x', transport: 'sse' } }, /integrations\[0\]\.source\.url/],
      [{ credentials: { api_key: 7 } }, /integrations\[0\]\.credentials/],
      [{ delivery: { in: 'cookie', name: 'X', value: 'v' } }, /integrations\[0\]\.delivery/],
      [{ toolPrefix: '@acme/crm' }, /integrations\[0\]\.toolPrefix/],
    ];
    for (const [change, message] of refusals) {
      assert.throws(() => parseAssignment(JSON.stringify({ ...base, integrations: [{ ...integration, ...change }] })), (err: Error) => {
        assert.match(err.message, message);
        assert.equal(err.message.includes('very-secret-value'), false);
        return true;
      });
    }
  });
});

// Cases written for the credential proxy.
test('(proxy cases) deliveryHeader renders prefix and {$credential.<field>} values; null when a field is missing or none is declared', () => {
  const d = { in: 'header' as const, name: 'Authorization', prefix: 'Bearer ', value: '{$credential.access_token}' };
  assert.deepEqual(deliveryHeader(d, { access_token: 'tok' }), ['Authorization', 'Bearer tok']);
  assert.equal(deliveryHeader(d, {}), null);
  assert.equal(deliveryHeader(null, { access_token: 'tok' }), null);
  assert.equal(deliveryHeader(d, { access_token: 'a\r\nX-Evil: 1' }), null, 'no header injection');
});

test('(proxy cases) authorizeCredentialTarget: literal, templated and wildcard entries', () => {
  const literal = ['https://api.example.com/v1/*'];
  assert.equal(authorizeCredentialTarget(literal, {}, 'https://api.example.com/v1/users'), 'ok');
  assert.equal(authorizeCredentialTarget(literal, {}, 'https://api.example.com/v2/users'), 'unauthorized_target');
  assert.equal(authorizeCredentialTarget(literal, {}, 'https://api.example.com.evil.test/v1/x'), 'unauthorized_target');
  assert.equal(authorizeCredentialTarget([], {}, 'https://api.example.com/v1/x'), 'unauthorized_target');
  const sub = ['https://{$credential.tenant}.example.com/*'];
  assert.equal(authorizeCredentialTarget(sub, { tenant: 'acme' }, 'https://acme.example.com/x'), 'ok');
  assert.equal(authorizeCredentialTarget(sub, { tenant: 'evil.test/x' }, 'https://evil.test/x'), 'unauthorized_target');
  const whole = ['https://{$credential.host}/*'];
  assert.equal(authorizeCredentialTarget(whole, { host: 'attacker.test' }, 'https://attacker.test/x'), 'credential_exfiltration_refused');
  assert.equal(authorizeCredentialTarget(['https://*.com/*'], {}, 'https://attacker.com/x'), 'credential_exfiltration_refused');
  assert.equal(authorizeCredentialTarget(['https://*.example.com/*'], {}, 'https://a.example.com/x'), 'credential_exfiltration_refused');
});
