// Delivery-header rendering and target authorization for credentials (lib/afps/credential-delivery.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { authorizeCredentialTarget, deliveryHeader } from '../../lib/afps/credential-delivery.ts';

test('deliveryHeader renders prefix and {$credential.<field>} values; null when a field is missing or none is declared', () => {
  const d = { in: 'header' as const, name: 'Authorization', prefix: 'Bearer ', value: '{$credential.access_token}' };
  assert.deepEqual(deliveryHeader(d, { access_token: 'tok' }), ['Authorization', 'Bearer tok']);
  assert.equal(deliveryHeader(d, {}), null);
  assert.equal(deliveryHeader(null, { access_token: 'tok' }), null);
  assert.equal(deliveryHeader(d, { access_token: 'a\r\nX-Evil: 1' }), null, 'no header injection');
});

test('authorizeCredentialTarget: literal, templated and wildcard entries', () => {
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
  assert.equal(authorizeCredentialTarget(['https://*.example.com/*'], {}, 'https://a.example.com/x'), 'ok');
});
