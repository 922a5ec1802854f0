import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildFixtureArchive, fixtureFiles, listFixtures } from '../fixtures/build-packages.ts';
import { readPackageArchive } from '../../lib/afps/archive.ts';
import type { AgentManifest, IntegrationManifest } from '../../lib/afps/manifest.ts';
import { writeZip } from '../../lib/zip/write-zip.ts';

const OPTS = { timeoutCeilingSeconds: 1800 };

const VALID: Record<string, string> = {
  'agent-echo': 'agent',
  'agent-plain': 'agent',
  'skill-summarize': 'skill',
  'mcp-server-sample': 'mcp-server',
  'integration-sample': 'integration',
  'integration-login': 'integration',
};

const INVALID: Record<string, { code: string; field?: string }> = {
  'agent-no-prompt': { code: 'missing_content' },
  'agent-output-without-tool': { code: 'invalid_manifest', field: 'runtime_tools' },
  'integration-compound-criteria': { code: 'invalid_manifest', field: 'auths.session.connect.login.success_criteria[0].condition' },
  'integration-cookie-delivery': { code: 'invalid_manifest', field: 'auths.api_key.delivery.http.in' },
  'bad-name': { code: 'invalid_manifest', field: 'name' },
};

function zipOf(files: Record<string, string>): Buffer {
  return writeZip(Object.entries(files).map(([name, text]) => [name, Buffer.from(text)]));
}

const AGENT_MANIFEST = JSON.stringify({ name: '@acme/bot', version: '1.0.0', type: 'agent' });
const SKILL_MANIFEST = JSON.stringify({ name: '@acme/sum', version: '1.0.0', type: 'skill' });

describe('package archives', () => {
  test('every fixture is classified as valid or invalid', async () => {
    assert.deepEqual(listFixtures(), [...Object.keys(VALID), ...Object.keys(INVALID)].sort());
  });

  for (const [name, type] of Object.entries(VALID)) {
    test(`fixture ${name} reads as a valid ${type} package`, async () => {
      const { manifest, files } = await readPackageArchive(buildFixtureArchive(name), OPTS);
      assert.equal(manifest.type, type);
      assert.deepEqual([...files.keys()].sort(), [...fixtureFiles(name).keys()].sort());
    });
  }

  for (const [name, expected] of Object.entries(INVALID)) {
    test(`fixture ${name} is refused with ${expected.code}`, async () => {
      await assert.rejects(() => readPackageArchive(buildFixtureArchive(name), OPTS), (err: any) => {
        assert.equal(err.code, expected.code);
        if (expected.field) assert.deepEqual(err.errors.map((e: any) => e.field), [expected.field]);
        return true;
      });
    });
  }

  test('fixture details survive parsing: clamped timeout, schemas, login', async () => {
    const echo = (await readPackageArchive(buildFixtureArchive('agent-echo'), { timeoutCeilingSeconds: 60 })).manifest as AgentManifest;
    assert.equal(echo.timeout, 60);
    assert.deepEqual(echo.runtime_tools, ['output', 'log']);
    const login = (await readPackageArchive(buildFixtureArchive('integration-login'), OPTS)).manifest as IntegrationManifest;
    assert.deepEqual(login.auths?.session.connect?.login.outputs, { session: { from: 'cookie', name: 'sid' } });
  });

  test('an archive without manifest.json at its root is missing_manifest', async () => {
    await assert.rejects(() => readPackageArchive(zipOf({ 'prompt.md': 'Hi' }), OPTS), { code: 'missing_manifest' });
    await assert.rejects(() => readPackageArchive(zipOf({ 'bot/manifest.json': AGENT_MANIFEST, 'bot/prompt.md': 'Hi' }), OPTS), (err: any) => {
      assert.equal(err.code, 'missing_manifest');
      assert.match(err.detail, /found bot\/manifest\.json/);
      return true;
    });
  });

  test('a manifest.json that is not JSON is invalid_manifest', async () => {
    await assert.rejects(() => readPackageArchive(zipOf({ 'manifest.json': '{ name: ', 'prompt.md': 'Hi' }), OPTS), { code: 'invalid_manifest' });
    await assert.rejects(() => readPackageArchive(writeZip([['manifest.json', Buffer.from([0xff, 0xfe, 0x00])]]), OPTS), { code: 'invalid_manifest' });
  });

  test('an agent needs a non-empty prompt.md', async () => {
    await assert.rejects(() => readPackageArchive(zipOf({ 'manifest.json': AGENT_MANIFEST }), OPTS), { code: 'missing_content' });
    await assert.rejects(() => readPackageArchive(zipOf({ 'manifest.json': AGENT_MANIFEST, 'prompt.md': ' \n\t\n' }), OPTS), { code: 'missing_content' });
    assert.equal((await readPackageArchive(zipOf({ 'manifest.json': AGENT_MANIFEST, 'prompt.md': 'Do it.' }), OPTS)).manifest.type, 'agent');
  });

  test('a skill needs SKILL.md with name and description in its frontmatter', async () => {
    await assert.rejects(() => readPackageArchive(zipOf({ 'manifest.json': SKILL_MANIFEST }), OPTS), { code: 'missing_content' });
    await assert.rejects(() => readPackageArchive(zipOf({ 'manifest.json': SKILL_MANIFEST, 'SKILL.md': '# No frontmatter' }), OPTS), { code: 'invalid_content' });
    await assert.rejects(() => readPackageArchive(zipOf({ 'manifest.json': SKILL_MANIFEST, 'SKILL.md': '---\nname: sum\n---\n' }), OPTS), { code: 'invalid_content' });
  });

  test('archive limits can be tightened per call', async () => {
    await assert.rejects(() => readPackageArchive(buildFixtureArchive('skill-summarize'), { ...OPTS, limits: { maxEntries: 2 } }), { code: 'package_archive_unreadable' });
  });
});
