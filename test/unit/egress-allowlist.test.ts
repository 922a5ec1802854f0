// EGRESS_ALLOW_INTERNAL_HOSTS names host and port, matched exactly; the platform's own endpoints
// are refused whatever it says. Checks only: nothing here connects anywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkEgressTarget, EgressRefusal, parseHostPort } from '../../lib/egress.ts';
import { ConfigError, loadConfig } from '../../lib/config.ts';

const refusal = (kind: string) => (err: unknown) => err instanceof EgressRefusal && err.kind === kind;
/** every name resolves to 127.0.0.1: as a hostile resolver would answer */
const toLoopback = async () => ['127.0.0.1'];

test('an allowlisted host is allowed on its port only', async () => {
  const opts = { allowInternalHosts: ['127.0.0.1:11435'] };
  assert.deepEqual((await checkEgressTarget('http://127.0.0.1:11435/v1', opts)).addresses, ['127.0.0.1']);
  await assert.rejects(checkEgressTarget('http://127.0.0.1:11436/v1', opts), refusal('blocked'));
  await assert.rejects(checkEgressTarget('http://127.0.0.1/v1', opts), refusal('blocked'));
  await assert.rejects(checkEgressTarget('http://127.0.0.2:11435/v1', opts), refusal('blocked'));
});

test('the port of a URL without one is its scheme\'s default', async () => {
  const opts = { allowInternalHosts: ['models.internal:80'], resolve: toLoopback };
  await checkEgressTarget('http://models.internal/v1', opts);
  await checkEgressTarget('http://models.internal:80/v1', opts);
  await assert.rejects(checkEgressTarget('https://models.internal/v1', opts), refusal('blocked'));
  await checkEgressTarget('https://MODELS.internal/v1', { allowInternalHosts: ['Models.Internal:443'], resolve: toLoopback });
});

test('hosts match exactly: a name that ends or starts like an allowed one is refused', async () => {
  const opts = { allowInternalHosts: ['127.0.0.1:8080', 'localhost:8080'], resolve: toLoopback };
  await checkEgressTarget('http://localhost:8080/', opts);
  for (const url of ['http://127.0.0.1.evil.test:8080/', 'http://notlocalhost:8080/', 'http://localhost.evil.test:8080/', 'http://a.localhost:8080/']) {
    await assert.rejects(checkEgressTarget(url, opts), refusal('blocked'), url);
  }
});

test('IPv6 literals are named in brackets, however they are written', async () => {
  await checkEgressTarget('http://[::1]:9000/', { allowInternalHosts: ['[0:0:0:0:0:0:0:1]:9000'] });
  await checkEgressTarget('http://[0::1]:9000/', { allowInternalHosts: ['[::1]:9000'] });
  await assert.rejects(checkEgressTarget('http://[::1]:9001/', { allowInternalHosts: ['[::1]:9000'] }), refusal('blocked'));
  assert.deepEqual(parseHostPort('[::1]:9000'), { host: '::1', port: 9000 });
  for (const bad of ['::1', '[::1]', '::1:9000', 'localhost', '127.0.0.1', '127.0.0.1:', '127.0.0.1:0', '127.0.0.1:70000', 'host:port', '[nothex]:80']) {
    assert.equal(parseHostPort(bad), null, bad);
  }
});

test('the platform\'s own endpoints are refused although allowlisted', async () => {
  const platformEndpoints = [{ host: '127.0.0.1', port: 5432 }, { host: 'db.internal', port: 6543 }];
  const allowInternalHosts = ['127.0.0.1:5432', 'localhost:5432', 'db.internal:6543', 'models.internal:6543'];
  const opts = { allowInternalHosts, platformEndpoints, resolve: toLoopback };
  for (const url of ['http://127.0.0.1:5432/', 'http://localhost:5432/', 'http://[::ffff:127.0.0.1]:5432/', 'http://db.internal:6543/', 'http://models.internal:6543/']) {
    await assert.rejects(checkEgressTarget(url, opts), (err: unknown) => refusal('blocked')(err) && /platform's own/.test((err as Error).message), url);
  }
  // the same ports elsewhere are someone else's: a public address passes
  await checkEgressTarget('https://public.test:5432/', { ...opts, resolve: async () => ['93.184.216.34'] });
  // another port of an allowlisted host is unaffected
  await checkEgressTarget('http://localhost:11435/', { ...opts, allowInternalHosts: ['localhost:11435'] });
});

test('a bare host in EGRESS_ALLOW_INTERNAL_HOSTS stops boot with a message naming the setting', () => {
  assert.deepEqual(loadConfig({ EGRESS_ALLOW_INTERNAL_HOSTS: '127.0.0.1:11435, [::1]:8080' }).EGRESS_ALLOW_INTERNAL_HOSTS, ['127.0.0.1:11435', '[::1]:8080']);
  for (const value of ['127.0.0.1', '127.0.0.1:11435,localhost', '::1']) {
    assert.throws(() => loadConfig({ EGRESS_ALLOW_INTERNAL_HOSTS: value }), (err: unknown) => err instanceof ConfigError && /EGRESS_ALLOW_INTERNAL_HOSTS: .*host:port/.test(err.message), value);
  }
});
