// The field errors parseManifest reports for a manifest (it must be refused), for unit tests.
import assert from 'node:assert/strict';
import { parseManifest } from '../../lib/afps/manifest.ts';
import { isProblem, type FieldError } from '../../lib/problem.ts';

export const MANIFEST_OPTS = { timeoutCeilingSeconds: 1800 };

export function manifestErrors(raw: unknown): FieldError[] {
  try {
    parseManifest(raw, MANIFEST_OPTS);
  } catch (err) {
    if (isProblem(err) && err.code === 'invalid_manifest') return err.errors ?? [];
    throw err;
  }
  return assert.fail('expected invalid_manifest');
}

export function codesByField(raw: unknown): Record<string, string> {
  return Object.fromEntries(manifestErrors(raw).map((e) => [e.field, e.code]));
}
