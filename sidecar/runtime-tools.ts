// The runtime tools an agent manifest can enable: output, log, note, pin, publish_file.
// Each turns into run events; none reaches anything outside the sidecar but the per-run files folder.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { requestText } from '../lib/outbound-http.ts';
import { RUN_LOG_LEVELS, signedRunEventHeaders, type RunLogLevel } from '../lib/run-events.ts';
import type { EventPoster } from './event-poster.ts';
import { outputChecker, type OutputCheck } from './output-validator.ts';
import { toolError, type SidecarTool } from './tool.ts';

export const RUNTIME_TOOL_NAMES = ['output', 'log', 'note', 'pin', 'publish_file'] as const;

const MAX_LIST_ENTRIES = 100;
const MAX_FILES = 100;
const MAX_FILE_BYTES = 10 * 1024 * 1024;
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

export interface RuntimeToolsContext {
  events: EventPoster;
  outputSchema: Record<string, unknown> | null;
  runtimeTools: string[];
  filesDir?: string;
  /** where a published file is posted to become a durable file of the run, signed with `secret` */
  publishUrl?: string;
  secret?: string;
}

const MEDIA_TYPES: Record<string, string> = {
  txt: 'text/plain', md: 'text/markdown', csv: 'text/csv', json: 'application/json', html: 'text/html', xml: 'application/xml',
  pdf: 'application/pdf', png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', svg: 'image/svg+xml',
};

function mediaTypeOf(name: string): string {
  const ext = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1).toLowerCase() : '';
  return MEDIA_TYPES[ext] ?? 'application/octet-stream';
}

/** Posts the file to the platform; answers the durable file's id, or the platform's refusal. */
async function postPublished(url: string, secret: string, name: string, bytes: Buffer): Promise<{ id: string } | { refused: string }> {
  const raw = JSON.stringify({ name, mimeType: mediaTypeOf(name), content: bytes.toString('base64') });
  try {
    const res = await requestText(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signedRunEventHeaders(secret, raw) },
      body: raw,
      timeoutMs: 60_000,
    });
    const body = (() => { try { return JSON.parse(res.text) as { id?: string; code?: string; detail?: string }; } catch { return {}; } })();
    if (res.status === 201 && typeof body.id === 'string') return { id: body.id };
    return { refused: `${body.code ?? `status ${res.status}`}${body.detail ? `: ${body.detail}` : ''}` };
  } catch (err) {
    return { refused: `the platform could not be reached (${(err as Error).message})` };
  }
}

function isObjectSchema(schema: Record<string, unknown>): boolean {
  return schema.type === 'object' || (schema.type === undefined && typeof schema.properties === 'object');
}

function outputTool(ctx: RuntimeToolsContext): SidecarTool {
  const schema = ctx.outputSchema;
  // MCP tool arguments are always an object: a non-object output schema travels wrapped in { output }
  const wrapped = schema !== null && !isObjectSchema(schema);
  // compiled right after the assignment is answered, off the path of the run's start
  let check: OutputCheck | undefined;
  const checker = () => (check ??= outputChecker(schema));
  setImmediate(checker);
  return {
    name: 'output',
    description:
      'Record the final result of this run. Call it once the work is done, with data that matches the schema; ' +
      'calling it again replaces the earlier result.',
    inputSchema: schema === null
      ? { type: 'object', additionalProperties: true }
      : wrapped
        ? { type: 'object', properties: { output: schema }, required: ['output'], additionalProperties: false }
        : schema,
    call(args) {
      const output = wrapped ? args.output : args;
      ctx.events.emit('output', { output });
      const problems = checker()(output);
      if (problems.length > 0) {
        return toolError(
          `Output recorded, but it does not match the output schema: ${problems.join('; ')}. ` +
            'Call output again with corrected data.',
        );
      }
      return { text: 'output recorded' };
    },
  };
}

function logTool(ctx: RuntimeToolsContext): SidecarTool {
  return {
    name: 'log',
    description: 'Write an entry to the run log, visible to the people following this run.',
    inputSchema: {
      type: 'object',
      properties: {
        level: { type: 'string', enum: [...RUN_LOG_LEVELS], default: 'info' },
        message: { type: 'string', minLength: 1 },
        data: { description: 'optional structured details' },
      },
      required: ['message'],
    },
    call(args) {
      if (typeof args.message !== 'string' || args.message === '') return toolError('message must be a non-empty string');
      const level: RunLogLevel = RUN_LOG_LEVELS.includes(args.level as RunLogLevel) ? (args.level as RunLogLevel) : 'info';
      ctx.events.emit('log', args.data === undefined ? { level, message: args.message } : { level, message: args.message, data: args.data });
      return { text: 'logged' };
    },
  };
}

/** note and pin: a short list kept for the run, each entry also logged with data.kind. */
function listTool(ctx: RuntimeToolsContext, kind: 'note' | 'pin', description: string): SidecarTool {
  const entries: string[] = [];
  return {
    name: kind,
    description,
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string', minLength: 1 } },
      required: ['text'],
    },
    call(args) {
      if (typeof args.text !== 'string' || args.text === '') return toolError('text must be a non-empty string');
      if (entries.length >= MAX_LIST_ENTRIES) return toolError(`at most ${MAX_LIST_ENTRIES} entries per run`);
      entries.push(args.text);
      ctx.events.emit('log', { level: 'info', message: args.text, data: { kind } });
      return { text: JSON.stringify(entries) };
    },
  };
}

function publishFileTool(ctx: RuntimeToolsContext): SidecarTool {
  const published = new Set<string>();
  return {
    name: 'publish_file',
    description:
      'Publish a file as a result of this run: give path (a file of your workspace) or content (text, or base64 when encoding is "base64").',
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', pattern: FILE_NAME.source, description: 'file name, no folders' },
        path: { type: 'string', description: 'a file of the workspace, relative to it, to publish instead of content' },
        content: { type: 'string' },
        encoding: { type: 'string', enum: ['utf8', 'base64'], default: 'utf8' },
      },
      required: ['name'],
    },
    async call(args) {
      if (!ctx.filesDir) return toolError('file publishing is not available for this run');
      const { name, content } = args;
      if (typeof name !== 'string' || !FILE_NAME.test(name)) {
        return toolError('name must be a plain file name (letters, digits, ".", "_", "-"; no folders)');
      }
      if (typeof content !== 'string') return toolError('give content (a string), or path: a file of the workspace');
      const bytes = args.encoding === 'base64' ? Buffer.from(content, 'base64') : Buffer.from(content, 'utf8');
      if (bytes.length > MAX_FILE_BYTES) return toolError(`a file may hold at most ${MAX_FILE_BYTES} bytes`);
      if (!published.has(name) && published.size >= MAX_FILES) return toolError(`at most ${MAX_FILES} files per run`);
      let fileId: string | undefined;
      if (ctx.publishUrl && ctx.secret) {
        const answer = await postPublished(ctx.publishUrl, ctx.secret, name, bytes);
        if ('refused' in answer) return toolError(`${name} was not published: ${answer.refused}`);
        fileId = answer.id;
      }
      await mkdir(ctx.filesDir, { recursive: true });
      await writeFile(join(ctx.filesDir, name), bytes);
      published.add(name);
      ctx.events.emit('log', { level: 'info', message: `published ${name}`, data: { kind: 'file', name, size: bytes.length, ...(fileId ? { file_id: fileId } : {}) } });
      return { text: `published ${name} (${bytes.length} bytes)${fileId ? ` as ${fileId}` : ''}` };
    },
  };
}

/** The runtime tools this run enabled; output is always there when an output schema is declared. */
export function runtimeTools(ctx: RuntimeToolsContext): SidecarTool[] {
  const enabled = new Set(ctx.runtimeTools);
  if (ctx.outputSchema !== null) enabled.add('output');
  const tools: SidecarTool[] = [];
  if (enabled.has('output')) tools.push(outputTool(ctx));
  if (enabled.has('log')) tools.push(logTool(ctx));
  if (enabled.has('note')) tools.push(listTool(ctx, 'note', 'Keep a short note for yourself during this run; answers with all notes so far.'));
  if (enabled.has('pin')) tools.push(listTool(ctx, 'pin', 'Pin a fact worth remembering beyond this run; answers with all pins so far.'));
  if (enabled.has('publish_file')) tools.push(publishFileTool(ctx));
  return tools;
}
