// The tools of the MCP endpoint: search, describe and invoke the API's operations, and the few an
// agent client wants first (list agents, run one and wait for its result, read a run and its logs).
// Every tool that touches tenant data is an HTTP request into the app under the caller's own
// credential (dispatch.ts).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { problem, problemBody } from '../../../lib/problem.ts';
import type { Permission } from '../../../lib/permissions.ts';
import { describeOperation, searchOperations, type Catalog } from './catalog.ts';
import { dispatch, type Answer, type Caller } from './dispatch.ts';

export const SERVER_INFO = { name: 'agent-platform', version: '1.0.0' };

/** Longest wait the run read allows (GET /api/runs/{id}?wait=). */
const MAX_WAIT_SECONDS = 55;
const DEFAULT_WAIT_SECONDS = 30;

export interface ToolContext {
  caller: Caller;
  catalog: () => Promise<Catalog>;
  permissions: ReadonlySet<Permission>;
  requestId: string;
  typeBase: string;
}

const spaceId = { type: 'string', description: 'Space (spc_...) to act in. Sessions need it for space-scoped operations; an API key is pinned to its own space.' };
const idempotencyKey = { type: 'string', maxLength: 255, description: 'Idempotency-Key for operations that honour it.' };

const TOOLS: Tool[] = [
  {
    name: 'search_operations',
    title: 'Search API operations',
    description: 'Search the operations of this platform\'s API (its OpenAPI document) by words of their method, path, summary, tag or permission. An empty query lists them all.',
    inputSchema: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1, maximum: 200, default: 20 } } },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'describe_operation',
    title: 'Describe an API operation',
    description: 'The parameters, request body and response schemas of one operation, with the components they reference.',
    inputSchema: { type: 'object', properties: { operation_id: { type: 'string' } }, required: ['operation_id'] },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'invoke_operation',
    title: 'Invoke an API operation',
    description: 'Calls one operation as an HTTP request under your own credential and permissions. Answers its status, notable headers and body (a problem document on failure).',
    inputSchema: {
      type: 'object',
      properties: {
        operation_id: { type: 'string' },
        path_params: { type: 'object', additionalProperties: { type: 'string' } },
        query: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean', 'array'] } },
        body: { description: 'JSON request body' },
        space_id: spaceId,
        idempotency_key: idempotencyKey,
      },
      required: ['operation_id'],
    },
  },
  {
    name: 'list_agents',
    title: 'List agents',
    description: 'The agents living in or placed in a space.',
    inputSchema: { type: 'object', properties: { space_id: spaceId, limit: { type: 'integer', minimum: 1, maximum: 100 }, offset: { type: 'integer', minimum: 0 } } },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'run_agent',
    title: 'Run an agent and wait for its result',
    description: 'Launches a run of an agent (@scope/name) with its input, then waits for it to end (at most wait_seconds, up to 55) and answers the run.',
    inputSchema: {
      type: 'object',
      properties: {
        agent: { type: 'string', pattern: '^@[a-z0-9][a-z0-9-]*/[^/]+$', description: '@scope/name' },
        input: { type: 'object', description: "Input satisfying the agent's input schema" },
        wait_seconds: { type: 'integer', minimum: 0, maximum: MAX_WAIT_SECONDS, default: DEFAULT_WAIT_SECONDS },
        space_id: spaceId,
        idempotency_key: idempotencyKey,
      },
      required: ['agent'],
    },
  },
  {
    name: 'get_run',
    title: 'Read a run and its logs',
    description: 'A run (optionally waiting up to wait_seconds for it to end) and, unless logs is false, its logs.',
    inputSchema: {
      type: 'object',
      properties: {
        run_id: { type: 'string' },
        wait_seconds: { type: 'integer', minimum: 0, maximum: MAX_WAIT_SECONDS },
        logs: { type: 'boolean', default: true },
        space_id: spaceId,
      },
      required: ['run_id'],
    },
    annotations: { readOnlyHint: true },
  },
];

/** Tools that reach tenant data act through operations: they need mcp:invoke besides mcp:read. */
const INVOKING = new Set(['invoke_operation', 'list_agents', 'run_agent', 'get_run']);

class ToolInputError extends Error {}

function text(value: unknown, isError = false): CallToolResult {
  const structured = (value && typeof value === 'object' && !Array.isArray(value) ? value : { value }) as Record<string, unknown>;
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: structured, isError };
}

const answered = (a: Answer): CallToolResult => text({ status: a.status, headers: a.headers, body: a.body }, a.status >= 400);

function str(args: Record<string, unknown>, name: string, required: true): string;
function str(args: Record<string, unknown>, name: string, required?: false): string | undefined;
function str(args: Record<string, unknown>, name: string, required = false): string | undefined {
  const v = args[name];
  if (v === undefined || v === null) {
    if (required) throw new ToolInputError(`${name} is required.`);
    return undefined;
  }
  if (typeof v !== 'string' || v === '') throw new ToolInputError(`${name} must be a non-empty string.`);
  return v;
}

function int(args: Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const v = args[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new ToolInputError(`${name} must be an integer from ${min} to ${max}.`);
  return v;
}

function queryString(q: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) {
    for (const item of Array.isArray(v) ? v : [v]) {
      if (item === undefined || item === null) continue;
      if (!['string', 'number', 'boolean'].includes(typeof item)) throw new ToolInputError(`query.${k} must be a string, number, boolean or an array of them.`);
      params.append(k, String(item));
    }
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

function objectArg(args: Record<string, unknown>, name: string): Record<string, unknown> {
  const v = args[name];
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new ToolInputError(`${name} must be an object.`);
  return v as Record<string, unknown>;
}

function agentPath(agent: string): string {
  const m = /^(@[a-z0-9][a-z0-9-]*)\/([^/]+)$/.exec(agent);
  if (!m) throw new ToolInputError('agent must be @scope/name.');
  return `/api/agents/${encodeURIComponent(m[1])}/${encodeURIComponent(m[2])}`;
}

async function invoke(ctx: ToolContext, args: Record<string, unknown>): Promise<CallToolResult> {
  const catalog = await ctx.catalog();
  const id = str(args, 'operation_id', true);
  const op = catalog.byId.get(id);
  if (!op) throw new ToolInputError(`No operation ${id}; search_operations lists them.`);
  const params = objectArg(args, 'path_params');
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const v = params[name];
    if (typeof v !== 'string' || v === '') throw new ToolInputError(`path_params.${name} is required (a string).`);
    return encodeURIComponent(v);
  });
  const target = path + queryString(objectArg(args, 'query'));
  return answered(await dispatch(ctx.caller, { method: op.method, target, body: args.body, spaceId: str(args, 'space_id'), idempotencyKey: str(args, 'idempotency_key') }));
}

async function runAgent(ctx: ToolContext, args: Record<string, unknown>): Promise<CallToolResult> {
  const base = agentPath(str(args, 'agent', true));
  const space = str(args, 'space_id');
  const wait = int(args, 'wait_seconds', 0, MAX_WAIT_SECONDS) ?? DEFAULT_WAIT_SECONDS;
  const launched = await dispatch(ctx.caller, { method: 'POST', target: `${base}/run`, body: { input: objectArg(args, 'input') }, spaceId: space, idempotencyKey: str(args, 'idempotency_key') });
  const runId = (launched.body as { id?: unknown } | null)?.id;
  if (launched.status >= 300 || typeof runId !== 'string' || wait === 0) return answered(launched);
  return answered(await dispatch(ctx.caller, { method: 'GET', target: `/api/runs/${encodeURIComponent(runId)}?wait=${wait}`, spaceId: space }));
}

async function getRun(ctx: ToolContext, args: Record<string, unknown>): Promise<CallToolResult> {
  const id = encodeURIComponent(str(args, 'run_id', true));
  const space = str(args, 'space_id');
  const wait = int(args, 'wait_seconds', 0, MAX_WAIT_SECONDS);
  const run = await dispatch(ctx.caller, { method: 'GET', target: `/api/runs/${id}${wait ? `?wait=${wait}` : ''}`, spaceId: space });
  if (run.status >= 400 || args.logs === false) return answered(run);
  const logs = await dispatch(ctx.caller, { method: 'GET', target: `/api/runs/${id}/logs`, spaceId: space });
  return text({ status: run.status, headers: run.headers, body: run.body, logs: { status: logs.status, body: logs.body } }, logs.status >= 400);
}

async function callTool(ctx: ToolContext, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  if (INVOKING.has(name) && !ctx.permissions.has('mcp:invoke')) {
    return text(problemBody(problem('forbidden', { detail: `The ${name} tool needs the mcp:invoke permission.` }), ctx.requestId, ctx.typeBase), true);
  }
  switch (name) {
    case 'search_operations': {
      const found = searchOperations(await ctx.catalog(), str(args, 'query') ?? '', int(args, 'limit', 1, 200) ?? 20);
      return text(found);
    }
    case 'describe_operation': {
      const catalog = await ctx.catalog();
      const id = str(args, 'operation_id', true);
      const op = catalog.byId.get(id);
      if (!op) throw new ToolInputError(`No operation ${id}; search_operations lists them.`);
      return text(describeOperation(catalog, op));
    }
    case 'invoke_operation':
      return invoke(ctx, args);
    case 'list_agents': {
      const q = queryString({ type: 'agent', limit: int(args, 'limit', 1, 100), offset: int(args, 'offset', 0, 100_000) });
      return answered(await dispatch(ctx.caller, { method: 'GET', target: `/api/packages${q}`, spaceId: str(args, 'space_id') }));
    }
    case 'run_agent':
      return runAgent(ctx, args);
    case 'get_run':
      return getRun(ctx, args);
    default:
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
  }
}

/** One server per HTTP request: the endpoint is stateless. */
export function buildServer(ctx: ToolContext): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {}, logging: {} },
    instructions: 'Search the API with search_operations, read an operation with describe_operation, call it with invoke_operation. list_agents, run_agent and get_run cover running agents. Every call acts under your own credential and permissions.',
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    try {
      return await callTool(ctx, request.params.name, (request.params.arguments ?? {}) as Record<string, unknown>);
    } catch (err) {
      if (err instanceof ToolInputError) return { content: [{ type: 'text', text: err.message }], isError: true };
      throw err;
    }
  });
  return server;
}
