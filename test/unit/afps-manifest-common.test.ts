import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isProblem, type FieldError } from '../../lib/problem.ts';
import { parseManifest } from '../../lib/afps/manifest.ts';
import { codesByField, manifestErrors, MANIFEST_OPTS } from '../support/manifest-errors.ts';

const OPTS = MANIFEST_OPTS;

function aSkill(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: '@acme/summarize', version: '1.0.0', type: 'skill', ...extra };
}


describe('manifest: members every package shares', () => {
  test('a minimal manifest with name, version and type is accepted as written', () => {
    assert.deepEqual(parseManifest(aSkill(), OPTS), aSkill());
  });

  test('the optional common members are accepted', () => {
    const raw = aSkill({ schema_version: '0.3', display_name: 'Summarize', description: 'Short texts', author: 'Acme', $schema: 'https://x/y.json' });
    assert.deepEqual(parseManifest(raw, OPTS), raw);
  });

  test('name, version and type are required, all reported at once', () => {
    assert.deepEqual(codesByField({}), { name: 'required', version: 'required', type: 'invalid_union' });
  });

  test('names must be @scope/name in lower case', () => {
    for (const name of ['summarize', '@acme', '@Acme/summarize', '@acme/Summarize', '@acme/sum_marize', '@-acme/x', '@acme/-x', '@acme/x-', '@acme/a--b', '@acme/a/b', 'acme/x']) {
      assert.deepEqual(codesByField(aSkill({ name })), { name: 'invalid_format' }, name);
    }
    for (const name of ['@acme/summarize', '@a/b', '@0x/v2-tool', '@my-org/x9']) {
      assert.equal(parseManifest(aSkill({ name }), OPTS).name, name);
    }
    assert.deepEqual(codesByField(aSkill({ name: 42 })), { name: 'invalid_type' });
  });

  test('version must be a semver version as written', () => {
    for (const version of ['1.0', 'v1.0.0', '=1.0.0', '1.0.0.0', 'latest', '^1.0.0', ' 1.0.0']) {
      assert.deepEqual(codesByField(aSkill({ version })), { version: 'invalid_format' }, version);
    }
    for (const version of ['0.0.1', '1.0.0-beta.1', '2.3.4+build.7']) {
      assert.equal(parseManifest(aSkill({ version }), OPTS).version, version);
    }
  });

  test('type must be one of the four package types', () => {
    assert.deepEqual(codesByField(aSkill({ type: 'flow' })), { type: 'invalid_value' });
    for (const type of ['skill']) assert.equal(parseManifest(aSkill({ type }), OPTS).type, type);
  });

  test('schema_version, when present, must be "0.3"', () => {
    assert.deepEqual(codesByField(aSkill({ schema_version: '1.0' })), { schema_version: 'invalid_value' });
    assert.deepEqual(codesByField(aSkill({ schema_version: 0.3 })), { schema_version: 'invalid_value' });
  });

  test('display_name, description and author must be strings', () => {
    assert.deepEqual(codesByField(aSkill({ display_name: '', description: 7, author: ['x'] })), {
      display_name: 'out_of_range', description: 'invalid_type', author: 'invalid_type',
    });
  });

  test('unknown members are refused, each as its own error', () => {
    const errors = manifestErrors(aSkill({ keywords: ['a'], license: 'MIT' }));
    assert.deepEqual(errors.map((e) => [e.field, e.code]), [['keywords', 'unknown_field'], ['license', 'unknown_field']]);
  });

  test('members of another type are unknown fields', () => {
    assert.deepEqual(codesByField(aSkill({ timeout: 30, source: { kind: 'none' } })), { timeout: 'unknown_field', source: 'unknown_field' });
  });

  test('a manifest that is not an object is refused', () => {
    for (const raw of [null, [], 'x', 3]) assert.deepEqual(codesByField(raw), { manifest: 'invalid_type' });
  });

  test('the problem detail names the first fault and counts the rest', () => {
    try {
      parseManifest({ name: 'x', version: 'y', type: 'skill' }, OPTS);
      assert.fail('expected a problem');
    } catch (err: any) {
      assert.equal(err.status, 400);
      assert.match(err.detail, /^The manifest is invalid: name .* \(and 1 more\)\.$/);
    }
  });
});
