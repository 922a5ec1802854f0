// The API key format as an integrator's client would check it: apst_, 30 base62 characters, then the
// CRC-32 (IEEE) of everything before it in base62, left-padded with 0 to 6 characters. The expected
// checksums are computed here with node's own zlib.crc32, independently of the platform's table.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import zlib from 'node:zlib';
import { isWellFormedApiKey, newApiKey } from '../../lib/api-key-format.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const crc32 = (zlib as unknown as { crc32(s: string): number }).crc32;

function independentChecksum(body: string): string {
  let n = crc32(body);
  let out = '';
  while (n > 0) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out.padStart(6, '0');
}

test('a new key is apst_ + 30 base62 + the checksum of what precedes it; its prefix is apst_ + 8', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const { key, prefix } = newApiKey();
    assert.match(key, /^apst_[0-9A-Za-z]{36}$/);
    assert.equal(key.slice(35), independentChecksum(key.slice(0, 35)));
    assert.equal(prefix, key.slice(0, 13));
    assert.ok(isWellFormedApiKey(key));
    seen.add(key);
  }
  assert.equal(seen.size, 200);
});

test('a key built by hand with the documented checksum is accepted, including a zero-padded checksum', () => {
  for (const random of ['0'.repeat(30), 'z'.repeat(30), 'AbCdEfGhIjKlMnOpQrStUvWxYz0123']) {
    const body = `apst_${random}`;
    assert.ok(isWellFormedApiKey(body + independentChecksum(body)), body);
  }
  // find a body whose checksum needs padding: small CRC values are written with leading zeros
  let padded = '';
  for (let i = 0; i < 200_000 && !padded; i++) {
    const body = `apst_${i.toString().padStart(30, '0')}`;
    if (crc32(body) < 62 ** 5) padded = body;
  }
  assert.ok(padded, 'no body with a padded checksum found');
  assert.equal(independentChecksum(padded)[0], '0');
  assert.ok(isWellFormedApiKey(padded + independentChecksum(padded)));
});

test('one character changed anywhere, in the random part or in the checksum, is refused', () => {
  const { key } = newApiKey();
  for (let i = 5; i < key.length; i++) {
    const other = BASE62[(BASE62.indexOf(key[i]) + 1) % 62];
    const mistyped = key.slice(0, i) + other + key.slice(i + 1);
    assert.equal(isWellFormedApiKey(mistyped), false, `position ${i}`);
  }
  // two random parts swapped keep every character but not the checksum
  const swapped = key.slice(0, 5) + key[6] + key[5] + key.slice(7);
  if (swapped !== key) assert.equal(isWellFormedApiKey(swapped), false);
});

test('wrong shapes are refused: prefix, length, alphabet, checksum written another way', () => {
  const { key } = newApiKey();
  const body = key.slice(0, 35);
  for (const bad of [
    '',
    'apst_',
    key.slice(0, -1),
    key + '0',
    'APST_' + key.slice(5),
    'apsk_' + key.slice(5),
    body.slice(0, 34) + '-' + key.slice(35),
    body + independentChecksum(body).toLowerCase().replace(/[0-9]/g, 'a'),
    body + crc32(body).toString(16).padStart(6, '0').slice(-6),
    ` ${key}`,
    `${key}\n`,
  ]) {
    if (bad === key) continue;
    assert.equal(isWellFormedApiKey(bad), false, JSON.stringify(bad));
  }
});

test('a wrong shape is refused even when it carries the right checksum of its own first 35 characters', () => {
  for (const body of ['apst_' + 'a'.repeat(29) + '-', 'APST_' + 'a'.repeat(30), 'apsk_' + 'b'.repeat(30), 'apst_' + 'é'.repeat(30), 'apst_' + 'a'.repeat(28) + ' \n']) {
    assert.equal(body.length, 35);
    assert.equal(isWellFormedApiKey(body + independentChecksum(body)), false, JSON.stringify(body));
  }
});
