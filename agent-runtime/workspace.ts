// What the agent runtime reads from its workspace: prompt.md, input.json and skills/<name>/SKILL.md.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface SkillSummary {
  /** the skill's folder name under skills/ */
  id: string;
  name: string;
  description: string;
  /** the skill's folder inside the workspace: skills/<name> */
  folder: string;
  /** path of SKILL.md inside the workspace */
  path: string;
}

export interface Workspace {
  dir: string;
  prompt: string;
  /** parsed input.json, undefined when absent */
  input: unknown;
  skills: SkillSummary[];
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function unquote(value: string): string {
  const v = value.trim();
  if (v.length >= 2 && ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'")))) return v.slice(1, -1);
  return v;
}

/** name and description from SKILL.md frontmatter: plain, quoted, or block (| or >) scalars. */
export function skillFrontmatter(text: string): { name?: string; description?: string } {
  const match = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text);
  if (!match) return {};
  const lines = match[1].split(/\r?\n/);
  const out: Record<string, string> = {};
  for (let i = 0; i < lines.length; i++) {
    const field = /^(name|description):\s*(.*)$/.exec(lines[i]);
    if (!field) continue;
    let value = field[2];
    if (/^[|>][-+]?$/.test(value.trim())) {
      const block: string[] = [];
      while (i + 1 < lines.length && (/^\s+\S/.test(lines[i + 1]) || lines[i + 1].trim() === '')) block.push(lines[++i].trim());
      value = block.join(value.trim().startsWith('>') ? ' ' : '\n').trim();
    }
    out[field[1]] = unquote(value);
  }
  return out;
}

async function readSkills(dir: string): Promise<SkillSummary[]> {
  let entries;
  try {
    entries = await readdir(join(dir, 'skills'), { withFileTypes: true });
  } catch {
    return [];
  }
  const skills: SkillSummary[] = [];
  for (const entry of entries.filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    const folder = join('skills', entry.name);
    const path = join(folder, 'SKILL.md');
    const text = await readOptional(join(dir, path));
    if (text === undefined) continue;
    const meta = skillFrontmatter(text);
    skills.push({ id: entry.name, name: meta.name ?? entry.name, description: meta.description ?? '', folder, path });
  }
  return skills;
}

export async function readWorkspace(dir: string): Promise<Workspace> {
  const prompt = (await readOptional(join(dir, 'prompt.md'))) ?? '';
  const inputText = await readOptional(join(dir, 'input.json'));
  const input = inputText === undefined || inputText.trim() === '' ? undefined : JSON.parse(inputText);
  return { dir, prompt, input, skills: await readSkills(dir) };
}
