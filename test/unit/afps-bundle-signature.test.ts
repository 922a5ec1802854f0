import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { fixtureFiles } from '../fixtures/build-packages.ts';
import {
  buildBundle, ed25519PublicKeyToTrustRootEntry, generateSigningKey, isTrustRootEntry, readBundle, type BundleInput,
} from '../../lib/afps/bundle.ts';
import { readZip } from '../../lib/zip/read-zip.ts';
import { writeZip } from '../../lib/zip/write-zip.ts';

const LIMITS = { maxEntries: 1000, maxEntryBytes: 1 << 24, maxTotalBytes: 1 << 26 };

function anEchoBundle(): BundleInput {
  return { root: '@fixtures/agent-echo', packages: [{ id: '@fixtures/agent-echo', version: '1.0.0', files: fixtureFiles('agent-echo') }] };
}

const signer = generateSigningKey();
const stranger = generateSigningKey();
const signed = buildBundle(anEchoBundle(), { privateKey: signer.privateKey });
const unsigned = buildBundle(anEchoBundle());

describe('bundle signatures and AFPS_SIGNATURE_POLICY', () => {
  test('trust-root entries are the base64 of the raw 32-byte public key', async () => {
    assert.ok(isTrustRootEntry(signer.trustRootEntry));
    const raw = signer.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
    assert.equal(signer.trustRootEntry, raw.toString('base64'));
    assert.equal(ed25519PublicKeyToTrustRootEntry(signer.privateKey), signer.trustRootEntry);
    assert.equal(isTrustRootEntry('not-a-key'), false);
    assert.throws(() => ed25519PublicKeyToTrustRootEntry(crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey), TypeError);
  });

  test('signed, policy required, key trusted: accepted', async () => {
    const read = await readBundle(signed, { policy: 'required', trustRoot: [stranger.trustRootEntry, signer.trustRootEntry] });
    assert.equal(read.signed, true);
    assert.equal(read.trusted, true);
    assert.equal(read.keyId, signer.trustRootEntry);
    assert.deepEqual(read.warnings, []);
  });

  test('unsigned, policy required: bundle_signature_invalid', async () => {
    await assert.rejects(() => readBundle(unsigned, { policy: 'required', trustRoot: [signer.trustRootEntry] }), (err: any) => {
      assert.equal(err.code, 'bundle_signature_invalid');
      assert.equal(err.status, 422);
      assert.match(err.detail, /not signed/);
      return true;
    });
  });

  test('signed by a key outside the trust root, policy required: refused', async () => {
    await assert.rejects(() => readBundle(signed, { policy: 'required', trustRoot: [stranger.trustRootEntry] }), (err: any) => {
      assert.equal(err.code, 'bundle_signature_invalid');
      assert.match(err.detail, /not in AFPS_TRUST_ROOT/);
      return true;
    });
  });

  test('a signature that does not verify is refused under required', async () => {
    const forged = await rewriteSignature(signed, (sig) => {
      const bytes = Buffer.from(sig.signature, 'base64');
      bytes[0] ^= 0x01;
      return { ...sig, signature: bytes.toString('base64') };
    });
    await assert.rejects(() => readBundle(forged, { policy: 'required', trustRoot: [signer.trustRootEntry] }), (err: any) => {
      assert.equal(err.code, 'bundle_signature_invalid');
      assert.match(err.detail, /does not verify/);
      return true;
    });
    // a trusted key id pasted over another key's signature does not verify either
    const relabelled = await rewriteSignature(buildBundle(anEchoBundle(), { privateKey: stranger.privateKey }), (sig) => ({ ...sig, key_id: signer.trustRootEntry }));
    await assert.rejects(() => readBundle(relabelled, { policy: 'required', trustRoot: [signer.trustRootEntry] }), { code: 'bundle_signature_invalid' });
  });

  test('a malformed signature.json is refused under required', async () => {
    const broken = await rewriteSignature(signed, (sig) => ({ ...sig, algorithm: 'rsa' }));
    await assert.rejects(() => readBundle(broken, { policy: 'required', trustRoot: [signer.trustRootEntry] }), { code: 'bundle_signature_invalid' });
  });

  test('policy warn accepts unsigned and untrusted bundles with a warning', async () => {
    const plain = await readBundle(unsigned, { policy: 'warn', trustRoot: [signer.trustRootEntry] });
    assert.equal(plain.signed, false);
    assert.equal(plain.warnings.length, 1);
    assert.match(plain.warnings[0], /not signed/);

    const untrusted = await readBundle(signed, { policy: 'warn', trustRoot: [] });
    assert.equal(untrusted.signed, true);
    assert.equal(untrusted.trusted, false);
    assert.match(untrusted.warnings[0], /not in AFPS_TRUST_ROOT/);

    const trusted = await readBundle(signed, { policy: 'warn', trustRoot: [signer.trustRootEntry] });
    assert.deepEqual(trusted.warnings, []);
  });

  test('policy off accepts without warnings, still reporting what it saw', async () => {
    const read = await readBundle(unsigned, { policy: 'off', trustRoot: [] });
    assert.deepEqual(read.warnings, []);
    assert.equal(read.signed, false);
    assert.equal((await readBundle(signed, { policy: 'off', trustRoot: [] })).signed, true);
  });

  test('a signature cannot be moved to a bundle with other contents', async () => {
    const other = anEchoBundle();
    other.packages[0].files.set('prompt.md', Buffer.from('Do something else entirely.'));
    const signature = (await readZip(signed, LIMITS)).get('signature.json')!;
    const transplanted = writeZip([...(await readZip(buildBundle(other), LIMITS)), ['signature.json', signature]]);
    await assert.rejects(() => readBundle(transplanted, { policy: 'required', trustRoot: [signer.trustRootEntry] }), (err: any) => {
      assert.equal(err.code, 'bundle_signature_invalid');
      assert.match(err.detail, /does not verify/);
      return true;
    });
  });
});

async function rewriteSignature(bundle: Buffer, change: (sig: Record<string, string>) => Record<string, string>): Promise<Buffer> {
  const entries = await readZip(bundle, LIMITS);
  const sig = JSON.parse(entries.get('signature.json')!.toString());
  entries.set('signature.json', Buffer.from(JSON.stringify(change(sig))));
  return writeZip(entries);
}
