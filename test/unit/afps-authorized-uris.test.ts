import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { matchesAuthorizedUri, parseAuthorizedUri, renderAuthorizedUri } from '../../lib/afps/authorized-uri.ts';

describe('authorized_uris patterns', () => {
  test('literal and templated patterns parse', () => {
    const literal = parseAuthorizedUri('https://api.example.com/v1/*');
    assert.ok(typeof literal !== 'string');
    assert.equal(literal.literal, true);
    assert.equal(literal.host, 'api.example.com');
    assert.equal(literal.path, '/v1/*');

    const templated = parseAuthorizedUri('https://{$credential.tenant}.example.com/*');
    assert.ok(typeof templated !== 'string');
    assert.equal(templated.literal, false);
    assert.deepEqual(templated.credentialFields, ['tenant']);
  });

  test('patterns that are not URLs with a path are refused', () => {
    for (const p of ['api.example.com/*', 'https://api.example.com', 'https://api.example.com/*#x', 'https://a b.com/*', 'https://api.example.com:99999/*', 'https://{tenant}.example.com/*']) {
      assert.equal(typeof parseAuthorizedUri(p), 'string', p);
    }
  });

  test('URLs match by scheme, host, port and path', () => {
    assert.equal(matchesAuthorizedUri('https://api.example.com/*', 'https://api.example.com/v1/items?page=2'), true);
    assert.equal(matchesAuthorizedUri('https://api.example.com/*', 'https://API.example.com/x'), true);
    assert.equal(matchesAuthorizedUri('https://api.example.com/*', 'https://api.example.com:443/x'), true);
    assert.equal(matchesAuthorizedUri('https://api.example.com/*', 'http://api.example.com/x'), false);
    assert.equal(matchesAuthorizedUri('https://api.example.com/*', 'https://api.example.com.evil.test/x'), false);
    assert.equal(matchesAuthorizedUri('https://api.example.com/*', 'https://api.example.com:8443/x'), false);
    assert.equal(matchesAuthorizedUri('https://api.example.com/*', 'https://user:pw@api.example.com/x'), false);
    assert.equal(matchesAuthorizedUri('https://api.example.com/v1/*', 'https://api.example.com/v2/x'), false);
    assert.equal(matchesAuthorizedUri('https://api.example.com/login', 'https://api.example.com/login'), true);
    assert.equal(matchesAuthorizedUri('https://*.example.com/*', 'https://eu.example.com/x'), true);
    assert.equal(matchesAuthorizedUri('https://*.example.com/*', 'https://example.com/x'), false);
    assert.equal(matchesAuthorizedUri('https://{$credential.t}.example.com/*', 'https://x.example.com/'), false);
  });

  test('templates render from credential fields, refusing values that reshape the URL', () => {
    assert.equal(renderAuthorizedUri('https://{$credential.t}.example.com/*', { t: 'acme' }), 'https://acme.example.com/*');
    assert.equal(renderAuthorizedUri('https://{$credential.t}.example.com/*', {}), null);
    assert.equal(renderAuthorizedUri('https://{$credential.t}.example.com/*', { t: 'evil.test/x?' }), null);
  });
});
