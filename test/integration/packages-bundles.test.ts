import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { buildBundle, generateSigningKey, readBundle } from '../../lib/afps/index.ts';
import { readZip, writeZip } from '../../lib/zip/index.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { aPackageWorld, agentFiles, download, importArchive, integrationFiles, skillFiles, upload, zip, type World } from './packages-harness.ts';

const signer = generateSigningKey();
const signingKeyDer = signer.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');

// An instance that signs its exports and accepts only bundles signed by a trusted key.
const w = await aPackageWorld({ env: { AFPS_SIGNING_KEY: signingKeyDer, AFPS_SIGNATURE_POLICY: 'required', AFPS_TRUST_ROOT: signer.trustRootEntry } });
// An instance with the defaults: no signing key, policy warn.
const plain = await aPackageWorld();
after(async () => {
  await w.app.close();
  await plain.app.close();
});

async function arrange(world: World): Promise<void> {
  for (const files of [
    skillFiles('@acme/summarize', '1.0.0'),
    skillFiles('@acme/summarize', '1.2.0', 'Better.'),
    integrationFiles('@acme/crm', '1.0.0'),
    agentFiles('@acme/bot', '1.0.0', {
      display_name: 'Bot',
      dependencies: { skills: { '@acme/summarize': '^1.0.0' }, integrations: { '@acme/crm': '~1.0.0' } },
      integrations_configuration: { '@acme/crm': { tools: ['api_call'] } },
    }),
  ]) assert.equal((await importArchive(world, zip(files))).status, 201);
}
await arrange(w);
await arrange(plain);

/** A second organization on the same instance, with its owner's key. */
async function anotherOrg(world: World): Promise<string> {
  const pool = world.app.deps.database.pool;
  const org = await anOrg(pool);
  return (await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId })).key;
}

async function exportBundle(world: World): Promise<Buffer> {
  const res = await download(world.app.url, '/api/agents/@acme/bot/bundle', { key: world.key });
  assert.equal(res.status, 200, res.bytes.toString());
  assert.equal(res.headers.get('ratelimit-policy'), '30;w=60');
  return res.bytes;
}

test('an export holds the agent and its resolved dependencies; another organization imports it', async () => {
  const bytes = await exportBundle(plain);
  const read = await readBundle(bytes, { policy: 'off', trustRoot: [] });
  assert.equal(read.root, '@acme/bot');
  assert.deepEqual(read.packages.map((p) => `${p.id}@${p.version}`), ['@acme/bot@1.0.0', '@acme/crm@1.0.0', '@acme/summarize@1.2.0']);
  assert.equal(read.signed, false);

  const key = await anotherOrg(plain);
  const imported = await upload(plain.app.url, '/api/packages/import-bundle', bytes, { key }, 'bot.afps-bundle');
  assert.equal(imported.status, 201, imported.text);
  assert.equal(imported.body.packageId, '@acme/bot');
  assert.equal(imported.body.signed, false);
  assert.match(imported.body.warnings[0], /not signed/);
  assert.deepEqual(imported.body.packages.map((p: any) => [p.packageId, p.status]), [['@acme/crm', 'created'], ['@acme/summarize', 'created'], ['@acme/bot', 'created']]);
  const prompt = await download(plain.app.url, '/api/packages/@acme/bot/files/content?path=prompt.md', { key });
  assert.equal(prompt.bytes.toString(), 'Answer the question.');

  const again = await upload(plain.app.url, '/api/packages/import-bundle', bytes, { key }, 'bot.afps-bundle');
  assert.equal(again.status, 200);
  assert.ok(again.body.packages.every((p: any) => p.status === 'unchanged'));
});

/** Where the stored data of an entry starts (after its local header). */
function entryDataOffset(archive: Buffer, name: string): number {
  const at = archive.indexOf(Buffer.from(name)) - 30;
  assert.equal(archive.readUInt32LE(at), 0x04034b50, `local header of ${name}`);
  return at + 30 + archive.readUInt16LE(at + 26) + archive.readUInt16LE(at + 28);
}

test('a bundle with one byte changed is refused', async () => {
  const bytes = await exportBundle(plain);
  const key = await anotherOrg(plain);

  // one byte of a file's stored (deflated) data flipped: the entry no longer checks out
  // (the ZIP container's own metadata, dates and the like, carries no meaning and no hash)
  for (const name of ['bundle.json', 'packages/@acme/bot/1.0.0/prompt.md', 'packages/@acme/summarize/1.2.0/SKILL.md']) {
    const flipped = Buffer.from(bytes);
    flipped[entryDataOffset(flipped, name)] ^= 0x01;
    const refused = await upload(plain.app.url, '/api/packages/import-bundle', flipped, { key });
    assert.ok(refused.status === 400 || refused.status === 422, `${name}: ${refused.text}`);
  }

  // one byte of the prompt changed, the archive rebuilt cleanly: the hashes catch it
  const entries = await readZip(bytes, { maxEntries: 100, maxEntryBytes: 1 << 20, maxTotalBytes: 1 << 22 });
  const promptPath = [...entries.keys()].find((p) => p.endsWith('/prompt.md'))!;
  const prompt = Buffer.from(entries.get(promptPath)!);
  prompt[0] ^= 0x20;
  entries.set(promptPath, prompt);
  const tampered = await upload(plain.app.url, '/api/packages/import-bundle', writeZip(entries), { key });
  assert.equal(tampered.status, 400, tampered.text);
  assert.equal(tampered.body.code, 'invalid_bundle');
  assert.match(tampered.body.detail, /integrity/);
  const nothing = await download(plain.app.url, '/api/packages/@acme/bot', { key });
  assert.equal(nothing.status, 404, 'nothing of a refused bundle was stored');
});

test('under policy required, a bundle signed by a trusted key is accepted; unsigned or untrusted ones are refused', async () => {
  const signed = await exportBundle(w);
  assert.equal((await readBundle(signed, { policy: 'required', trustRoot: [signer.trustRootEntry] })).trusted, true);
  const key = await anotherOrg(w);
  const accepted = await upload(w.app.url, '/api/packages/import-bundle', signed, { key });
  assert.equal(accepted.status, 201, accepted.text);
  assert.equal(accepted.body.signed, true);
  assert.equal(accepted.body.trusted, true);
  assert.deepEqual(accepted.body.warnings, []);

  const unsigned = await exportBundle(plain);
  const refused = await upload(w.app.url, '/api/packages/import-bundle', unsigned, { key: await anotherOrg(w) });
  assert.equal(refused.status, 422, refused.text);
  assert.equal(refused.body.code, 'bundle_signature_invalid');

  const stranger = generateSigningKey();
  const read = await readBundle(unsigned, { policy: 'off', trustRoot: [] });
  const foreign = buildBundle({ root: read.root, packages: read.packages }, { privateKey: stranger.privateKey });
  const untrusted = await upload(w.app.url, '/api/packages/import-bundle', foreign, { key: await anotherOrg(w) });
  assert.equal(untrusted.status, 422);
  assert.equal(untrusted.body.code, 'bundle_signature_invalid');
});

test('a contained version already published with other content is integrity_mismatch; another type is bundle_conflict', async () => {
  const bytes = await exportBundle(plain);
  const pool = plain.app.deps.database.pool;
  const org = await anOrg(pool);
  const key = (await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId })).key;
  assert.equal((await importArchive(plain, zip(skillFiles('@acme/summarize', '1.2.0', 'Something else.')), { key })).status, 201);
  const mismatch = await upload(plain.app.url, '/api/packages/import-bundle', bytes, { key });
  assert.equal(mismatch.status, 409, mismatch.text);
  assert.equal(mismatch.body.code, 'integrity_mismatch');

  const org3 = await anOrg(pool);
  const key3 = (await aKey(pool, { orgId: org3.orgId, spaceId: org3.spaceId, userId: org3.ownerId })).key;
  assert.equal((await importArchive(plain, zip(skillFiles('@acme/crm', '1.0.0')), { key: key3 })).status, 201);
  const conflict = await upload(plain.app.url, '/api/packages/import-bundle', bytes, { key: key3 });
  assert.equal(conflict.status, 409);
  assert.equal(conflict.body.code, 'bundle_conflict');
});

test('AFPS_SIGNING_KEY may also be PEM', async () => {
  const pem = signer.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  assert.ok(crypto.createPrivateKey(pem).asymmetricKeyType === 'ed25519');
});
