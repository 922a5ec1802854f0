// The agent's own tools on its workspace: list, read (line ranges), write, edit (one exact
// replacement), search (glob and text) and, where the launch offers it, a shell. Every path goes
// through the path guard (workspace-path.ts); every answer is capped. Their names begin with
// `workspace_`, which no sidecar tool takes (runtime tools have fixed names, integration tools
// are <scope>_<name>__<tool>); a clash is refused rather than shadowed.
import { closeSync, lstatSync, readdirSync, readlinkSync, readSync, writeSync } from 'node:fs';
import { jsonSchema, tool, type ToolSet } from 'ai';
import { checkRelativePath, WorkspacePathError, WorkspaceRoot } from './workspace-path.ts';
import { DEFAULT_SHELL_TIMEOUT_SECONDS, describeShell, MAX_SHELL_OUTPUT_BYTES, MAX_SHELL_TIMEOUT_SECONDS, runShell, type ShellMode } from './workspace-shell.ts';

export type { ShellMode } from './workspace-shell.ts';

export const WORKSPACE_TOOL_PREFIX = 'workspace_';
/** what one tool answer may hold */
export const MAX_TOOL_OUTPUT_BYTES = 64 * 1024;
export const MAX_WRITE_BYTES = 10 * 1024 * 1024;
/** files edited or searched are read whole: above this they are refused or skipped */
export const MAX_EDIT_BYTES = 10 * 1024 * 1024;
const MAX_SEARCH_FILE_BYTES = 1024 * 1024;
const MAX_LINE_CHARS = 2000;
const DEFAULT_READ_LINES = 500;
const MAX_LIST_ENTRIES = 500;
const MAX_SEARCH_RESULTS = 200;
const MAX_SEARCH_VISITS = 20_000;


export interface WorkspaceToolsOptions {
  workspace: string;
  shell: ShellMode;
}

function cap(text: string, max = MAX_TOOL_OUTPUT_BYTES): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= max) return text;
  return `${bytes.subarray(0, max).toString('utf8')}\n[output cut at ${max} bytes of ${bytes.length}]`;
}

function readAll(fd: number, limit: number, given: string): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  const chunk = Buffer.alloc(64 * 1024);
  for (;;) {
    const n = readSync(fd, chunk, 0, chunk.length, null);
    if (n === 0) break;
    total += n;
    if (total > limit) throw new WorkspacePathError(given, `it is larger than ${limit} bytes`);
    chunks.push(Buffer.from(chunk.subarray(0, n)));
  }
  return Buffer.concat(chunks);
}

/** The bytes of a workspace file (links out of the workspace refused), at most `limit` of them. */
export function readWorkspaceFile(root: WorkspaceRoot, given: unknown, limit: number): Buffer {
  const opened = root.openFile(given);
  try {
    return readAll(opened.fd, limit, String(given));
  } finally {
    closeSync(opened.fd);
  }
}

function str(args: Record<string, unknown>, key: string, required: boolean): string | undefined {
  const v = args[key];
  if (v === undefined || v === null) {
    if (required) throw new Error(`${key} is required`);
    return undefined;
  }
  if (typeof v !== 'string') throw new Error(`${key} must be a string`);
  return v;
}

function int(args: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const v = args[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new Error(`${key} must be an integer from ${min} to ${max}`);
  return v;
}

/** The lines [offset, offset + limit) of a file (1-based), without reading past what is needed. */
export function readLines(root: WorkspaceRoot, given: unknown, offset = 1, limit = DEFAULT_READ_LINES): string {
  const { fd, rel } = root.openFile(given);
  try {
    const out: string[] = [];
    let lineNo = 1;
    let partial = '';
    let bytes = 0;
    let more = false;
    const chunk = Buffer.alloc(64 * 1024);
    const decoder = new TextDecoder('utf-8');
    const take = (line: string) => {
      if (lineNo >= offset && lineNo < offset + limit) {
        const shown = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)} [line cut at ${MAX_LINE_CHARS} characters]` : line;
        bytes += Buffer.byteLength(shown) + 1;
        out.push(shown);
      }
      lineNo++;
    };
    reading: for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      const text = partial + (n === 0 ? decoder.decode() : decoder.decode(chunk.subarray(0, n), { stream: true }));
      const lines = text.split('\n');
      partial = n === 0 ? '' : lines.pop()!;
      for (const line of n === 0 && lines.at(-1) === '' ? lines.slice(0, -1) : lines) {
        if (lineNo >= offset + limit || bytes > MAX_TOOL_OUTPUT_BYTES) {
          more = true;
          break reading;
        }
        take(line);
      }
      if (n === 0) break;
    }
    const last = offset + out.length - 1;
    const header = out.length === 0 ? `${rel}: no lines from line ${offset} (the file has ${lineNo - 1})` : `${rel}: lines ${offset}-${last}`;
    const trailer = more ? `\n[more lines follow: read with offset=${last + 1}]` : '';
    return cap(`${header}\n${out.join('\n')}${trailer}`);
  } finally {
    closeSync(fd);
  }
}

export function listFolder(root: WorkspaceRoot, given: unknown): string {
  const { fd, rel } = root.openFolder(given);
  try {
    const folder = WorkspaceRoot.inFolder(fd, '');
    const names = readdirSync(folder).sort();
    const lines: string[] = [];
    for (const name of names.slice(0, MAX_LIST_ENTRIES)) {
      let stat;
      try {
        stat = lstatSync(WorkspaceRoot.inFolder(fd, name));
      } catch {
        continue; // removed meanwhile
      }
      if (stat.isDirectory()) lines.push(`${name}/`);
      else if (stat.isSymbolicLink()) lines.push(`${name} -> ${readlinkSync(WorkspaceRoot.inFolder(fd, name))}`);
      else if (stat.isFile()) lines.push(`${name}\t${stat.size} bytes${stat.mode & 0o111 ? ', executable' : ''}`);
      else lines.push(`${name}\t(not a regular file)`);
    }
    if (names.length > MAX_LIST_ENTRIES) lines.push(`[${names.length - MAX_LIST_ENTRIES} more entries not shown]`);
    return cap(`${rel === '.' ? 'workspace' : rel}/ (${names.length} entries)\n${lines.join('\n')}`);
  } finally {
    closeSync(fd);
  }
}

export function writeFile(root: WorkspaceRoot, given: unknown, content: string): string {
  const bytes = Buffer.from(content);
  if (bytes.length > MAX_WRITE_BYTES) throw new Error(`content is larger than ${MAX_WRITE_BYTES} bytes`);
  const { fd, rel } = root.openForWrite(given, { create: true });
  try {
    let done = 0;
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
  } finally {
    closeSync(fd);
  }
  return `wrote ${bytes.length} bytes to ${rel}`;
}

export function editFile(root: WorkspaceRoot, given: unknown, oldText: string, newText: string): string {
  if (oldText === '') throw new Error('old_text must not be empty');
  const opened = root.openFile(given);
  let text: string;
  try {
    text = readAll(opened.fd, MAX_EDIT_BYTES, String(given)).toString('utf8');
  } finally {
    closeSync(opened.fd);
  }
  const first = text.indexOf(oldText);
  if (first < 0) throw new Error(`old_text was not found in ${opened.rel}; nothing changed`);
  let count = 0;
  for (let at = first; at >= 0; at = text.indexOf(oldText, at + 1)) count++;
  if (count > 1) throw new Error(`old_text occurs ${count} times in ${opened.rel}; give more surrounding text so it matches once; nothing changed`);
  const updated = text.slice(0, first) + newText + text.slice(first + oldText.length);
  // written through the same guard: a file swapped for a link meanwhile is refused
  writeFileNoCreate(root, opened.rel, updated);
  return `replaced 1 occurrence in ${opened.rel}`;
}

function writeFileNoCreate(root: WorkspaceRoot, rel: string, content: string): void {
  const bytes = Buffer.from(content);
  const { fd } = root.openForWrite(rel, { create: false });
  try {
    let done = 0;
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
  } finally {
    closeSync(fd);
  }
}

/** A glob as a regular expression over relative paths: `**` any folders, `*` and `?` within a name. */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*' && glob[i + 1] === '*') {
      const slash = glob[i + 2] === '/';
      re += slash ? '(?:.*/)?' : '.*';
      i += slash ? 2 : 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/**
 * Files under a folder whose relative path matches the glob (default every file), and, given
 * text, the lines holding it. Links are not followed; large and binary files are not searched.
 */
export function searchFiles(root: WorkspaceRoot, opts: { path?: unknown; glob?: string; text?: string; ignoreCase?: boolean }): string {
  const start = root.openFolder(opts.path ?? '.');
  const base = start.rel === '.' ? '' : `${start.rel}/`;
  const matcher = opts.glob ? globToRegExp(opts.glob) : undefined;
  const needle = opts.text === undefined ? undefined : opts.ignoreCase ? opts.text.toLowerCase() : opts.text;
  if (needle === '') throw new Error('text must not be empty');
  const results: string[] = [];
  let visits = 0;
  let stopped = '';
  const walk = (folderFd: number, prefix: string): void => {
    let names: string[];
    try {
      names = readdirSync(WorkspaceRoot.inFolder(folderFd, '')).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (results.length >= MAX_SEARCH_RESULTS) return void (stopped ||= `[stopped at ${MAX_SEARCH_RESULTS} results]`);
      if (++visits > MAX_SEARCH_VISITS) return void (stopped ||= `[stopped after ${MAX_SEARCH_VISITS} entries]`);
      const full = WorkspaceRoot.inFolder(folderFd, name);
      const rel = `${prefix}${name}`;
      let stat;
      try {
        stat = lstatSync(full);
      } catch {
        continue;
      }
      if (stat.isDirectory()) {
        let fd: number;
        try {
          fd = root.openFolder(`${base}${rel}`).fd;
        } catch {
          continue;
        }
        try {
          walk(fd, `${rel}/`);
        } finally {
          closeSync(fd);
        }
        continue;
      }
      if (!stat.isFile()) continue;
      if (matcher && !matcher.test(rel) && !matcher.test(name)) continue;
      if (needle === undefined) {
        results.push(`${base}${rel}`);
        continue;
      }
      if (stat.size > MAX_SEARCH_FILE_BYTES) continue;
      let content: Buffer;
      try {
        const f = root.openFile(`${base}${rel}`);
        try {
          content = readAll(f.fd, MAX_SEARCH_FILE_BYTES, rel);
        } finally {
          closeSync(f.fd);
        }
      } catch {
        continue;
      }
      if (content.includes(0)) continue;
      const lines = content.toString('utf8').split('\n');
      for (let i = 0; i < lines.length && results.length < MAX_SEARCH_RESULTS; i++) {
        const hay = opts.ignoreCase ? lines[i].toLowerCase() : lines[i];
        if (hay.includes(needle)) results.push(`${base}${rel}:${i + 1}: ${lines[i].slice(0, 500)}`);
      }
    }
  };
  try {
    walk(start.fd, '');
  } finally {
    closeSync(start.fd);
  }
  const body = results.length === 0 ? 'no matches' : results.join('\n');
  return cap(stopped ? `${body}\n${stopped}` : body);
}

const schema = (properties: Record<string, unknown>, required: string[]) =>
  jsonSchema({ type: 'object', properties, required, additionalProperties: false } as Parameters<typeof jsonSchema>[0]);

/** The workspace tools for the model, bash among them only when the launch gave the agent a shell. */
export function workspaceTools(opts: WorkspaceToolsOptions): ToolSet {
  const root = new WorkspaceRoot(opts.workspace);
  const args = (a: unknown) => (a && typeof a === 'object' ? (a as Record<string, unknown>) : {});
  const pathProp = { type: 'string', description: 'path relative to the workspace (no leading /, no ..)' };
  const tools: ToolSet = {
    [`${WORKSPACE_TOOL_PREFIX}list`]: tool({
      description: 'List a folder of the workspace (default: the workspace itself): names, sizes, folders end with /.',
      inputSchema: schema({ path: pathProp }, []),
      execute: async (a: unknown) => listFolder(root, str(args(a), 'path', false) ?? '.'),
    }),
    [`${WORKSPACE_TOOL_PREFIX}read`]: tool({
      description: `Read a text file of the workspace, ${DEFAULT_READ_LINES} lines at a time by default; offset is the first line (1-based), limit the number of lines.`,
      inputSchema: schema({ path: pathProp, offset: { type: 'integer', minimum: 1 }, limit: { type: 'integer', minimum: 1, maximum: 5000 } }, ['path']),
      execute: async (a: unknown) => {
        const x = args(a);
        return readLines(root, str(x, 'path', true), int(x, 'offset', 1, Number.MAX_SAFE_INTEGER) ?? 1, int(x, 'limit', 1, 5000) ?? DEFAULT_READ_LINES);
      },
    }),
    [`${WORKSPACE_TOOL_PREFIX}write`]: tool({
      description: 'Create or overwrite a file of the workspace with the given text; missing folders are created.',
      inputSchema: schema({ path: pathProp, content: { type: 'string' } }, ['path', 'content']),
      execute: async (a: unknown) => writeFile(root, str(args(a), 'path', true), str(args(a), 'content', true)!),
    }),
    [`${WORKSPACE_TOOL_PREFIX}edit`]: tool({
      description: 'Replace one exact occurrence of old_text by new_text in a file; refused when old_text is missing or occurs more than once.',
      inputSchema: schema({ path: pathProp, old_text: { type: 'string' }, new_text: { type: 'string' } }, ['path', 'old_text', 'new_text']),
      execute: async (a: unknown) => editFile(root, str(args(a), 'path', true), str(args(a), 'old_text', true)!, str(args(a), 'new_text', true)!),
    }),
    [`${WORKSPACE_TOOL_PREFIX}search`]: tool({
      description: 'Find files under a folder (default the workspace) by glob (e.g. **/*.md) and, given text, the lines containing it.',
      inputSchema: schema({ path: pathProp, glob: { type: 'string' }, text: { type: 'string' }, ignore_case: { type: 'boolean' } }, []),
      execute: async (a: unknown) => {
        const x = args(a);
        return searchFiles(root, { path: str(x, 'path', false), glob: str(x, 'glob', false), text: str(x, 'text', false), ignoreCase: x.ignore_case === true });
      },
    }),
  };
  if (opts.shell) {
    const mode = opts.shell;
    tools[`${WORKSPACE_TOOL_PREFIX}bash`] = tool({
      description:
        `Run a bash command with the workspace as its working directory (a skill's scripts: bash skills/<name>/scripts/x.sh). ` +
        `Output (stdout and stderr) is cut at ${MAX_SHELL_OUTPUT_BYTES} bytes; timeout_seconds defaults to ${DEFAULT_SHELL_TIMEOUT_SECONDS}.` +
        (mode.kind === 'bubblewrap' ? ' It has no network and sees only the workspace and a read-only system.' : ''),
      inputSchema: schema({ command: { type: 'string' }, timeout_seconds: { type: 'integer', minimum: 1, maximum: MAX_SHELL_TIMEOUT_SECONDS } }, ['command']),
      execute: async (a: unknown) => {
        const x = args(a);
        const command = str(x, 'command', true)!;
        if (command.includes('\0')) throw new Error('command must not contain NUL');
        const timeout = int(x, 'timeout_seconds', 1, MAX_SHELL_TIMEOUT_SECONDS) ?? DEFAULT_SHELL_TIMEOUT_SECONDS;
        return describeShell(await runShell(root.real, mode, command, timeout), timeout);
      },
    });
  }
  return tools;
}

export { checkRelativePath };
