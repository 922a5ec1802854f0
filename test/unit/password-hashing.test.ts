// Passwords: scrypt with the parameters stored in the hash, a fresh salt each time, and the same
// work done whether or not there is a hash to compare with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashPassword, verifyPassword } from '../../api/services/passwords.ts';

test('a hash names its algorithm and parameters and verifies only its own password', async () => {
  const hash = await hashPassword('correct horse battery staple');
  assert.match(hash, /^\$scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  assert.equal(await verifyPassword('correct horse battery staple', hash), true);
  assert.equal(await verifyPassword('correct horse battery stapler', hash), false);
});

test('the same password hashes differently each time (salted)', async () => {
  const [a, b] = await Promise.all([hashPassword('same'), hashPassword('same')]);
  assert.notEqual(a, b);
  assert.equal(await verifyPassword('same', b), true);
});

test('a hash made with other parameters still verifies', async () => {
  // ln=10 stands for hashes written before the parameters were raised.
  const { scryptSync, randomBytes } = await import('node:crypto');
  const salt = randomBytes(16);
  const key = scryptSync('older', salt, 32, { N: 2 ** 10, r: 8, p: 1 });
  const older = `$scrypt$ln=10,r=8,p=1$${salt.toString('base64url')}$${key.toString('base64url')}`;
  assert.equal(await verifyPassword('older', older), true);
  assert.equal(await verifyPassword('newer', older), false);
});

test('no hash, or a malformed one, is false after the same amount of work', async () => {
  const hash = await hashPassword('warm the decoy');
  await verifyPassword('x', null);
  const t0 = performance.now();
  await verifyPassword('guess', hash);
  const real = performance.now() - t0;
  const t1 = performance.now();
  assert.equal(await verifyPassword('guess', null), false);
  const none = performance.now() - t1;
  assert.equal(await verifyPassword('guess', 'plaintext-from-elsewhere'), false);
  assert.ok(none > real * 0.4, `no hash took ${none.toFixed(1)} ms, a real one ${real.toFixed(1)} ms`);
});
