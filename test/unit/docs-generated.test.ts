// The generated tables of the documentation stay true: the settings table (docs/reference/settings.md)
// is the configuration schema's, the error-code table (docs/reference/errors.md) the catalog's. Each is
// regenerated in memory and compared with the page; a change to lib/config.ts, lib/config-docs.ts or
// lib/error-catalog.ts without `npm run docs:generate` fails here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigSchema } from '../../lib/config.ts';
import { errorCatalog } from '../../lib/error-catalog.ts';
import { errorsTable, settingDocFaults, settingsTable, stalePages, withTable } from '../../scripts/docs-generate.ts';

test('every setting of the schema has a description, and every description a setting', () => {
  assert.deepEqual(settingDocFaults(), []);
});

test('the settings table has one row per setting, in the schema order, with the schema defaults', () => {
  const rows = settingsTable().split('\n').slice(2);
  assert.deepEqual(rows.map((r) => /^\| `(\w+)` \|/.exec(r)?.[1]), Object.keys(ConfigSchema.shape));
  assert.match(rows.find((r) => r.startsWith('| `PORT` '))!, /^\| `PORT` \| `3000` \|/);
  assert.match(rows.find((r) => r.startsWith('| `DATABASE_URL` '))!, /\| unset: embedded PostgreSQL \|/);
});

test('the error table has one row per catalog code with its status', () => {
  const rows = errorsTable().split('\n').slice(2);
  assert.equal(rows.length, Object.keys(errorCatalog).length);
  assert.ok(rows.includes('| `bootstrap_token_unavailable` | 410 | None redeemable or already redeemed |'));
});

test('the pages hold the tables generation gives (npm run docs:generate writes them)', () => {
  const stale = stalePages();
  assert.deepEqual(stale.map((s) => s.file), [], 'run `npm run docs:generate` and commit the pages');
});

test('a change of the schema or the catalog shows as a stale page', () => {
  const page = withTable('a\n<!-- generated:x:start -->\nold\n<!-- generated:x:end -->\nb\n', 'x', 'new');
  assert.equal(page, 'a\n<!-- generated:x:start -->\nnew\n<!-- generated:x:end -->\nb\n');
  assert.throws(() => withTable('no markers', 'x', 't'), /markers/);
});
