// First-party tools backed by the platform: run_history and recall_memory. Each is a GET to a
// per-run URL from the assignment, signed like the run events (empty body).
import { requestText } from '../lib/outbound-http.ts';
import { signedRunEventHeaders } from '../lib/run-events.ts';
import { toolError, type SidecarTool, type ToolAnswer } from './tool.ts';

export interface FirstPartyToolsContext {
  secret: string;
  historyUrl?: string;
  memoryUrl?: string;
}

async function signedGet(url: string, secret: string, query: Record<string, string | undefined>): Promise<ToolAnswer> {
  const target = new URL(url);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) target.searchParams.set(k, v);
  try {
    const res = await requestText(target, {
      headers: { accept: 'application/json', ...signedRunEventHeaders(secret, '') },
      timeoutMs: 15_000,
    });
    if (res.status < 200 || res.status >= 300) return toolError(`the platform answered ${res.status}`);
    return { text: res.text };
  } catch {
    return toolError('the platform could not be reached');
  }
}

export function firstPartyTools(ctx: FirstPartyToolsContext): SidecarTool[] {
  return [
    {
      name: 'run_history',
      description: 'Earlier runs of this agent: when they ran, their status and their output.',
      inputSchema: {
        type: 'object',
        properties: { limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 } },
      },
      call: (args) =>
        ctx.historyUrl
          ? signedGet(ctx.historyUrl, ctx.secret, { limit: Number.isInteger(args.limit) ? String(args.limit) : undefined })
          : { text: '[]' },
    },
    {
      name: 'recall_memory',
      description: 'Facts this agent pinned in earlier runs, optionally filtered by a query.',
      inputSchema: {
        type: 'object',
        properties: { query: { type: 'string' } },
      },
      call: (args) =>
        ctx.memoryUrl
          ? signedGet(ctx.memoryUrl, ctx.secret, { query: typeof args.query === 'string' ? args.query : undefined })
          : { text: '[]' },
    },
  ];
}
