// `npm run docs:generate`: writes the generated tables of the documentation between their markers:
// the settings table of docs/reference/settings.md from the configuration schema (lib/config.ts) and
// the descriptions beside it (lib/config-docs.ts), and the error-code table of
// docs/reference/errors.md from the catalog (lib/error-catalog.ts). `--check` writes nothing and
// exits 1 when a page is not what generation gives (test/unit/docs-generated.test.ts does the same).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigSchema } from '../lib/config.ts';
import { settingDocs } from '../lib/config-docs.ts';
import { errorCatalog, type CatalogEntry } from '../lib/error-catalog.ts';

export const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

/** A cell of a Markdown table: no line break, and a bare `|` escaped. */
const cell = (text: string): string => text.replace(/\s*\n\s*/g, ' ').replace(/(?<!\\)\|/g, '\\|');

/** The value a setting takes when it is not set, as the schema gives it (undefined when it has none). */
export function schemaDefault(name: string): unknown {
  const field = (ConfigSchema.shape as Record<string, { safeParse(v: unknown): { success: boolean; data?: unknown; error?: unknown } }>)[name];
  if (!field) throw new Error(`${name} is not a setting of lib/config.ts`);
  const parsed = field.safeParse(undefined);
  if (!parsed.success) throw new Error(`${name}: the schema refuses it unset (${String(parsed.error)})`);
  return parsed.data;
}

/** An unset setting's value counts as empty when it is undefined, an empty list or an empty object. */
export function isEmptyDefault(value: unknown): boolean {
  if (value === undefined) return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && value !== null && Object.keys(value).length === 0;
}

function formatDefault(name: string): string {
  const value = schemaDefault(name);
  const unset = settingDocs[name]?.unset;
  if (isEmptyDefault(value)) return unset ? `unset: ${unset}` : 'unset';
  if (Array.isArray(value)) return `\`${value.join(',')}\``;
  if (typeof value === 'object') return `\`${JSON.stringify(value)}\``;
  return `\`${String(value)}\``;
}

/** Faults of the description map against the schema: settings without an entry, entries of no setting, misplaced `unset`. */
export function settingDocFaults(): string[] {
  const names = Object.keys(ConfigSchema.shape);
  const faults: string[] = [];
  for (const n of names) {
    const doc = settingDocs[n];
    if (!doc) faults.push(`${n} has no description in lib/config-docs.ts`);
    else if (doc.description.trim().length < 8) faults.push(`${n}: its description is empty`);
    else if (doc.unset && !isEmptyDefault(schemaDefault(n))) faults.push(`${n}: \`unset\` is for settings without a default, and it has one`);
  }
  for (const n of Object.keys(settingDocs)) if (!names.includes(n)) faults.push(`lib/config-docs.ts describes ${n}, which lib/config.ts does not read`);
  return faults;
}

export function settingsTable(): string {
  const faults = settingDocFaults();
  if (faults.length) throw new Error(faults.join('\n'));
  const rows = Object.keys(ConfigSchema.shape).map((n) => `| \`${n}\` | ${cell(formatDefault(n))} | ${cell(settingDocs[n]!.description)} |`);
  return ['| Setting | Default | Meaning |', '|---|---|---|', ...rows].join('\n');
}

export function errorsTable(): string {
  const entries = Object.entries(errorCatalog as Record<string, CatalogEntry>).sort(([a], [b]) => a.localeCompare(b));
  const rows = entries.map(([code, e]) => `| \`${code}\` | ${e.status}${e.also?.length ? ` (also ${e.also.join(', ')})` : ''} | ${cell(e.title)} |`);
  return ['| Code | Status | Title |', '|---|---|---|', ...rows].join('\n');
}

/** The generated pages: each file, its marker name and the table that goes between its markers. */
export const generated = [
  { file: 'docs/reference/settings.md', marker: 'settings', table: settingsTable },
  { file: 'docs/reference/errors.md', marker: 'errors', table: errorsTable },
];

/** The text with the table between `<!-- generated:<marker>:start -->` and `...:end -->`. */
export function withTable(text: string, marker: string, table: string): string {
  const start = `<!-- generated:${marker}:start -->`;
  const end = `<!-- generated:${marker}:end -->`;
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  if (a < 0 || b < a) throw new Error(`no ${start} ... ${end} markers`);
  return `${text.slice(0, a + start.length)}\n${table}\n${text.slice(b)}`;
}

/** Regenerates every page in memory: the files whose text would change. */
export function stalePages(): Array<{ file: string; current: string; wanted: string }> {
  return generated.flatMap(({ file, marker, table }) => {
    const current = fs.readFileSync(path.join(root, file), 'utf8');
    const wanted = withTable(current, marker, table());
    return current === wanted ? [] : [{ file, current, wanted }];
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const stale = stalePages();
  if (process.argv.includes('--check')) {
    for (const s of stale) console.error(`${s.file} is not regenerated: run npm run docs:generate`);
    process.exit(stale.length ? 1 : 0);
  }
  for (const s of stale) fs.writeFileSync(path.join(root, s.file), s.wanted);
  console.log(stale.length ? `regenerated ${stale.map((s) => s.file).join(', ')}` : 'the generated tables were already current');
}
