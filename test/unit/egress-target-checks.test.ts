// The egress guard's verdicts, as a hostile resolver, URL or allowlist entry would probe them:
// what each refusal says, what an IP literal or an empty answer means, how allowlist and
// authorizedHosts entries are read, and when a target is one of the platform's own endpoints.
// Checks only: nothing here connects anywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkEgressTarget, classifyAddress, EgressRefusal, isMachineAddress, isPublicAddress, parseHostPort } from '../../lib/egress.ts';

function refusedWith(kind: string, message: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof EgressRefusal, 'an EgressRefusal');
    assert.equal(err.name, 'EgressRefusal');
    assert.equal(err.kind, kind);
    assert.match(err.message, message);
    return true;
  };
}

const none = { allowInternalHosts: [] as string[] };

test('each refusal says why', async () => {
  await assert.rejects(checkEgressTarget('not a url', none), refusedWith('invalid_url', /^The URL cannot be parsed\.$/));
  await assert.rejects(checkEgressTarget('ftp://example.com/', none), refusedWith('invalid_url', /^The scheme ftp: is not allowed\.$/));
  await assert.rejects(checkEgressTarget('https://u:p@example.com/', none), refusedWith('invalid_url', /^URLs with credentials are not allowed\.$/));
  await assert.rejects(
    checkEgressTarget('https://gone.test/', { ...none, resolve: async () => { throw new Error('ENOTFOUND'); } }),
    refusedWith('unresolvable', /^The host gone\.test does not resolve\.$/),
  );
  await assert.rejects(
    checkEgressTarget('https://inside.test/', { ...none, resolve: async () => ['10.1.2.3'] }),
    refusedWith('blocked', /^The host inside\.test resolves to 10\.1\.2\.3, a private address\.$/),
  );
});

test('a user name alone, or a password alone, is a credential in the URL', async () => {
  for (const url of ['https://user@93.184.216.34/', 'https://:secret@93.184.216.34/']) {
    await assert.rejects(checkEgressTarget(url, none), refusedWith('invalid_url', /credentials/), url);
  }
});

test('an empty answer is no address: unresolvable, never allowed', async () => {
  await assert.rejects(checkEgressTarget('https://empty.test/', { ...none, resolve: async () => [] }), refusedWith('unresolvable', /^The host empty\.test does not resolve\.$/));
});

test('an IP literal is judged as written: no resolver is asked about it', async () => {
  let asked = 0;
  const resolve = async () => {
    asked++;
    return ['93.184.216.34'];
  };
  await assert.rejects(checkEgressTarget('http://127.0.0.1/', { ...none, resolve }), refusedWith('blocked', /loopback/));
  await assert.rejects(checkEgressTarget('http://[fd00::1]/', { ...none, resolve }), refusedWith('blocked', /unique local/));
  assert.equal(asked, 0);
});

test('a resolver answer that is not an IP address is refused', async () => {
  assert.equal(classifyAddress('example.com'), 'not an IP address');
  assert.equal(classifyAddress(''), 'not an IP address');
  await assert.rejects(checkEgressTarget('https://odd.test/', { ...none, resolve: async () => ['localhost'] }), refusedWith('blocked', /not an IP address/));
});

test('isPublicAddress is true for public addresses only', () => {
  assert.equal(isPublicAddress('93.184.216.34'), true);
  assert.equal(isPublicAddress('2606:4700:4700::1111'), true);
  assert.equal(isPublicAddress('10.0.0.1'), false);
  assert.equal(isPublicAddress('::1'), false);
});

test('more special-purpose blocks and IPv6 forms ending in a dotted quad', () => {
  assert.match(classifyAddress('192.88.99.1') ?? '', /6to4 relay/);
  assert.equal(classifyAddress('192.88.100.1'), null);
  assert.match(classifyAddress('1:2:3:4:5:6:1.2.3.4') ?? '', /unallocated/);
  assert.match(classifyAddress('2001:db8:1:2:3:4:1.2.3.4') ?? '', /documentation/);
  assert.equal(classifyAddress('2606:4700:1:2:3:4:1.2.3.4'), null);
});

test('allowlist entries: trimmed, lower-cased, a port from 1 to 65535 and nothing after it', () => {
  assert.deepEqual(parseHostPort('  Models.Internal:8080  '), { host: 'models.internal', port: 8080 });
  assert.deepEqual(parseHostPort('h:1'), { host: 'h', port: 1 });
  assert.deepEqual(parseHostPort('h:65535'), { host: 'h', port: 65535 });
  for (const bad of ['127.0.0.1:80x', '127.0.0.1:80/path', 'h:65536', '[1.2.3.4]:80', '[::1]:80x']) {
    assert.equal(parseHostPort(bad), null, bad);
  }
});

test('authorizedHosts entries are matched trimmed, case-blind and without brackets; any one entry is enough', async () => {
  const allowInternalHosts = ['localhost:8080', '[::1]:8080'];
  const resolve = async () => ['127.0.0.1'];
  await checkEgressTarget('http://localhost:8080/', { allowInternalHosts, resolve, authorizedHosts: ['api.example.com', ' LOCALHOST '] });
  await checkEgressTarget('http://[::1]:8080/', { allowInternalHosts, authorizedHosts: ['api.example.com', '[::1]'] });
  await assert.rejects(checkEgressTarget('http://[::1]:8080/', { allowInternalHosts, authorizedHosts: ['api.example.com'] }), refusedWith('blocked', /loopback/));
});

test('this machine\'s own addresses are known, IPv6 by value', () => {
  assert.equal(isMachineAddress('127.0.0.1'), true);
  assert.equal(isMachineAddress('0:0:0:0:0:0:0:1'), true);
  assert.equal(isMachineAddress('93.184.216.34'), false);
  assert.equal(isMachineAddress('2606:4700:4700::1111'), false);
});

const own = (message = /platform's own/) => refusedWith('blocked', message);

test('a platform port at a local address is the platform\'s, whatever host the endpoint names', async () => {
  const opts = { allowInternalHosts: ['other.test:5432'], platformEndpoints: [{ host: 'localhost', port: 5432 }] };
  // one local address among public ones is enough
  await assert.rejects(checkEgressTarget('http://other.test:5432/', { ...opts, resolve: async () => ['93.184.216.34', '127.0.0.2'] }), own());
  // a public address on that port is someone else's
  await checkEgressTarget('http://public.test:5432/', { ...opts, resolve: async () => ['93.184.216.34'] });
  await checkEgressTarget('http://[2606:4700:4700::1111]:5432/', opts);
});

test('a platform endpoint named by host is matched case-blind, and by address when it is an IP literal', async () => {
  const resolve = async () => ['93.184.216.34', '2606:4700:4700::1111'];
  await assert.rejects(checkEgressTarget('https://api.example.com/', { ...none, resolve, platformEndpoints: [{ host: 'API.Example.COM', port: 443 }] }), own());
  await assert.rejects(checkEgressTarget('https://public.test/', { ...none, resolve, platformEndpoints: [{ host: '93.184.216.34', port: 443 }] }), own());
  await assert.rejects(checkEgressTarget('https://public.test/', { ...none, resolve, platformEndpoints: [{ host: '[2606:4700:4700::1111]', port: 443 }] }), own());
  await checkEgressTarget('https://public.test/', { ...none, resolve, platformEndpoints: [{ host: '93.184.216.35', port: 443 }, { host: 'api.example.com', port: 443 }] });
});
