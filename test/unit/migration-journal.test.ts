// The migration journal as drizzle's migrator reads it: entries are applied in journal order, and
// on a database that has migrations already, only those whose `when` is later than the last one
// applied run. A migration that lands after others but carries an earlier `when` would be skipped
// on every existing installation without a word, so `when` must grow along the journal.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { MIGRATIONS_DIR } from '../../db/migrate.ts';

interface Entry { idx: number; tag: string; when: number }

/** What an existing installation would skip: entries not later than one before them. */
function skippedOnUpgrade(entries: Entry[]): string[] {
  const out: string[] = [];
  let latest = -Infinity;
  for (const e of entries) {
    if (e.when <= latest) out.push(e.tag);
    latest = Math.max(latest, e.when);
  }
  return out;
}

const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as { entries: Entry[] };

test('every migration is applied on an installation that already has the earlier ones: `when` grows along the journal', () => {
  assert.deepEqual(skippedOnUpgrade(journal.entries), []);
});

test('a migration landing after a later-dated one is caught', () => {
  const entries = [{ idx: 44, tag: '0044_a', when: 44 }, { idx: 45, tag: '0045_b', when: 45 }, { idx: 31, tag: '0031_c', when: 31 }];
  assert.deepEqual(skippedOnUpgrade(entries), ['0031_c']);
});

test('every SQL file has a journal entry and every entry its file', () => {
  const files = fs.readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).map((f) => f.replace(/\.sql$/, '')).sort();
  assert.deepEqual([...journal.entries.map((e) => e.tag)].sort(), files);
});
