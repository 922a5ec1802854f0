import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkPublishable, resolveVersionSpec, type PublishedVersion } from '../../lib/afps/versions.ts';

const VERSIONS: PublishedVersion[] = [
  { version: '1.0.0', yanked: false },
  { version: '1.1.0', yanked: false },
  { version: '1.2.0', yanked: true },
  { version: '1.3.0-beta.1', yanked: false },
  { version: '2.0.0', yanked: false },
  { version: '2.1.0', yanked: true },
];
const TAGS = { latest: '2.0.0', beta: '1.3.0-beta.1', old: '1.2.0', gone: '9.9.9' };

describe('version resolution', () => {
  test('an exact version resolves to itself; a yanked one is version_yanked', () => {
    assert.deepEqual(resolveVersionSpec('1.1.0', VERSIONS, TAGS), { version: '1.1.0' });
    assert.deepEqual(resolveVersionSpec('1.2.0', VERSIONS, TAGS), { error: 'version_yanked' });
    assert.deepEqual(resolveVersionSpec('3.0.0', VERSIONS, TAGS), { error: 'version_not_found' });
  });

  test('a dist-tag resolves to its target', () => {
    assert.deepEqual(resolveVersionSpec('latest', VERSIONS, TAGS), { version: '2.0.0' });
    assert.deepEqual(resolveVersionSpec('beta', VERSIONS, TAGS), { version: '1.3.0-beta.1' });
    assert.deepEqual(resolveVersionSpec('old', VERSIONS, TAGS), { error: 'version_yanked' });
    assert.deepEqual(resolveVersionSpec('gone', VERSIONS, TAGS), { error: 'version_not_found' });
    assert.deepEqual(resolveVersionSpec('nightly', VERSIONS, TAGS), { error: 'version_not_found' });
    assert.deepEqual(resolveVersionSpec('constructor', VERSIONS, TAGS), { error: 'version_not_found' });
  });

  test('latest without a tag is the highest stable non-yanked version', () => {
    assert.deepEqual(resolveVersionSpec('latest', VERSIONS, {}), { version: '2.0.0' });
    assert.deepEqual(resolveVersionSpec('latest', [{ version: '1.0.0', yanked: true }], {}), { error: 'version_not_found' });
  });

  test('a range resolves to the highest non-yanked version it admits', () => {
    assert.deepEqual(resolveVersionSpec('^1.0.0', VERSIONS, TAGS), { version: '1.1.0' });
    assert.deepEqual(resolveVersionSpec('^2', VERSIONS, TAGS), { version: '2.0.0' });
    assert.deepEqual(resolveVersionSpec('*', VERSIONS, TAGS), { version: '2.0.0' });
    assert.deepEqual(resolveVersionSpec('>=1.2.0 <2', VERSIONS, TAGS), { error: 'version_not_found' });
    assert.deepEqual(resolveVersionSpec('^3.0.0', VERSIONS, TAGS), { error: 'version_not_found' });
    assert.deepEqual(resolveVersionSpec('~1.3.0-beta.0', VERSIONS, TAGS), { version: '1.3.0-beta.1' });
  });

  test('nonsense is version_not_found', () => {
    assert.deepEqual(resolveVersionSpec('', VERSIONS, TAGS), { error: 'version_not_found' });
    assert.deepEqual(resolveVersionSpec('not a version!', VERSIONS, TAGS), { error: 'version_not_found' });
  });
});

describe('publish rules', () => {
  test('the first version and any higher version may be published', () => {
    assert.equal(checkPublishable('0.1.0', []), null);
    assert.equal(checkPublishable('2.0.1', ['1.0.0', '2.0.0']), null);
    assert.equal(checkPublishable('2.0.0', ['1.0.0', '2.0.0-rc.1']), null);
  });

  test('a published version cannot be published again, build metadata aside', () => {
    assert.equal(checkPublishable('1.0.0', ['1.0.0']), 'version_exists');
    assert.equal(checkPublishable('1.0.0+build.2', ['1.0.0+build.1']), 'version_exists');
  });

  test('a version lower than the highest published is refused, yanked versions included', () => {
    assert.equal(checkPublishable('1.5.0', ['1.0.0', '2.0.0']), 'version_not_higher');
    assert.equal(checkPublishable('2.0.0-rc.1', ['2.0.0']), 'version_not_higher');
  });

  test('a new version that is not semver is a caller error', () => {
    assert.throws(() => checkPublishable('latest', []), TypeError);
  });
});
