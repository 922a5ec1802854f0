// The "Codes not produced" table of docs/reference/errors.md: every catalog code that no test provokes, each with the
// reason. Parsed here for the catalog check; that page is the one place the list lives.
import fs from 'node:fs';

export const NOT_PRODUCED_HEADING = 'Codes not produced';

export interface NotProducedRow {
  code: string;
  reason: string;
  line: number;
}

export interface NotProducedTable {
  rows: NotProducedRow[];
  /** well-formedness faults, each naming its line */
  faults: string[];
}

const cells = (line: string): string[] => line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());

/** Reads the first table under the `## Codes not produced` heading. */
export function parseNotProducedTable(markdown: string): NotProducedTable {
  const lines = markdown.split('\n');
  const faults: string[] = [];
  const rows: NotProducedRow[] = [];
  const start = lines.findIndex((l) => /^#{2,3}\s+/.test(l) && l.replace(/^#+\s+/, '').trim() === NOT_PRODUCED_HEADING);
  if (start < 0) return { rows, faults: [`no "## ${NOT_PRODUCED_HEADING}" heading`] };
  let i = start + 1;
  while (i < lines.length && !lines[i]!.trim().startsWith('|')) {
    if (/^#{1,3}\s/.test(lines[i]!)) return { rows, faults: [`no table under "${NOT_PRODUCED_HEADING}"`] };
    i += 1;
  }
  if (i >= lines.length) return { rows, faults: [`no table under "${NOT_PRODUCED_HEADING}"`] };
  const header = cells(lines[i]!).map((c) => c.toLowerCase());
  if (header.length !== 2 || header[0] !== 'code' || header[1] !== 'reason') faults.push(`line ${i + 1}: the header must be | Code | Reason |`);
  const rule = lines[i + 1] ?? '';
  if (!/^\|?\s*:?-{3,}:?\s*\|\s*:?-{3,}:?\s*\|?\s*$/.test(rule.trim())) faults.push(`line ${i + 2}: the header must be followed by | --- | --- |`);
  const seen = new Map<string, number>();
  for (let j = i + 2; j < lines.length && lines[j]!.trim().startsWith('|'); j += 1) {
    const row = cells(lines[j]!);
    const at = `line ${j + 1}`;
    if (row.length !== 2) {
      faults.push(`${at}: a row has two cells, code and reason`);
      continue;
    }
    const m = /^`([A-Za-z0-9_]+)`$/.exec(row[0]!);
    if (!m) {
      faults.push(`${at}: the code must be one word in backticks`);
      continue;
    }
    const code = m[1]!;
    if (row[1]!.length < 12) faults.push(`${at}: ${code} needs a reason`);
    if (seen.has(code)) faults.push(`${at}: ${code} is listed twice (also line ${seen.get(code)})`);
    seen.set(code, j + 1);
    rows.push({ code, reason: row[1]!, line: j + 1 });
  }
  if (rows.length === 0 && faults.length === 0) faults.push(`the "${NOT_PRODUCED_HEADING}" table has no rows`);
  return { rows, faults };
}

export function readNotProducedTable(readmePath: string): NotProducedTable {
  return parseNotProducedTable(fs.readFileSync(readmePath, 'utf8'));
}
