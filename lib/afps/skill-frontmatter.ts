// The frontmatter of SKILL.md: a block between "---" lines at the top holding YAML-style
// `key: value` lines. Only what skills use is read: top-level scalars (plain, single- or
// double-quoted, or a `|` / `>` block); indented lines under a key with no value are a nested
// block kept as raw text. name and description are required.
import { problem } from '../problem.ts';

export interface SkillFrontmatter {
  name: string;
  description: string;
  /** every top-level key, name and description included, as text */
  attributes: Record<string, string>;
  /** the markdown after the frontmatter */
  body: string;
}

const KEY_LINE = /^([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*))?$/;

function invalid(detail: string) {
  return problem('invalid_content', { detail: `SKILL.md: ${detail}` });
}

function unquote(raw: string, lineNumber: number): string {
  const value = raw.trim();
  if (value.startsWith('"')) {
    if (!/^"(?:[^"\\]|\\.)*"$/.test(value)) throw invalid(`line ${lineNumber} has an unterminated double-quoted value.`);
    try {
      return JSON.parse(value) as string;
    } catch {
      throw invalid(`line ${lineNumber} has an invalid escape in a double-quoted value.`);
    }
  }
  if (value.startsWith("'")) {
    if (!/^'(?:[^']|'')*'$/.test(value)) throw invalid(`line ${lineNumber} has an unterminated single-quoted value.`);
    return value.slice(1, -1).replace(/''/g, "'");
  }
  // a plain scalar ends where a comment starts
  return value.replace(/\s+#.*$/, '');
}

export function parseSkillFrontmatter(text: string): SkillFrontmatter {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  if (lines[0]?.trim() !== '---') throw invalid('must start with a frontmatter block opened by a "---" line.');
  const close = lines.findIndex((line, i) => i > 0 && line.trim() === '---');
  if (close < 0) throw invalid('the frontmatter block is not closed by a "---" line.');

  const attributes: Record<string, string> = {};
  let i = 1;
  while (i < close) {
    const line = lines[i];
    if (line.trim() === '' || line.trimStart().startsWith('#')) { i++; continue; }
    if (/^\s/.test(line)) throw invalid(`line ${i + 1} is indented but belongs to no key.`);
    const match = KEY_LINE.exec(line);
    if (!match) throw invalid(`line ${i + 1} is not a "key: value" line.`);
    const [, key, rest = ''] = match;
    if (Object.hasOwn(attributes, key)) throw invalid(`key "${key}" appears twice.`);

    // Collect the indented lines that follow: a block scalar or a nested map.
    const block: string[] = [];
    let j = i + 1;
    while (j < close && (lines[j].trim() === '' || /^\s/.test(lines[j]))) block.push(lines[j++]);
    while (block.length && block[block.length - 1].trim() === '') block.pop();

    const indicator = rest.trim();
    if (/^[|>][+-]?$/.test(indicator)) {
      const indent = Math.min(...block.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
      const body = block.map((l) => l.slice(Number.isFinite(indent) ? indent : 0));
      attributes[key] = indicator.startsWith('|') ? body.join('\n') : body.map((l) => l.trim()).join(' ').replace(/\s+/g, ' ').trim();
    } else if (indicator === '') {
      attributes[key] = block.join('\n');
    } else {
      if (block.some((l) => l.trim() !== '')) throw invalid(`line ${i + 2} is indented under "${key}", which already has a value.`);
      attributes[key] = unquote(rest, i + 1);
    }
    i = j;
  }

  const name = attributes.name?.trim();
  const description = attributes.description?.trim();
  if (!name) throw invalid('the frontmatter needs a non-empty name.');
  if (!description) throw invalid('the frontmatter needs a non-empty description.');
  return { name, description, attributes, body: lines.slice(close + 1).join('\n') };
}
