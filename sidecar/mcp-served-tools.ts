// An MCP server's selected tools, served to the agent under the naming rule `${toolPrefix}__${tool}`:
// the one shape shared by remote integrations (integration-tools.ts) and local ones
// (local-integration-tools.ts). The server's list is read once; a server that does not answer then
// still gets its tools listed, and calling one says why it fails.
import type { McpToolResult } from '../lib/mcp/tool-shapes.ts';
import type { SidecarTool, ToolAnswer } from './tool.ts';

/** What the sidecar asks of an MCP client (the SDK's Client has these). */
export interface ToolsClient {
  listTools(params?: undefined, options?: { timeout: number }): Promise<{ tools: Array<{ name: string; description?: string; inputSchema: Record<string, unknown> }> }>;
  callTool(params: { name: string; arguments: Record<string, unknown> }, resultSchema?: undefined, options?: { timeout: number }): Promise<unknown>;
}

export interface ServedTools {
  packageId: string;
  toolPrefix: string;
  tools: string[];
  client(): Promise<ToolsClient>;
  listTimeoutMs: number;
  /** a call's deadline; the client's own default when unset */
  callTimeoutMs?: number;
  /** the tool answer for a list or call that failed */
  failure(err: unknown): ToolAnswer;
  /** rewrites a result's content before the agent sees it (a remote one: credentials scrubbed) */
  clean?(content: McpToolResult['content']): McpToolResult['content'];
}

export async function servedTools(s: ServedTools): Promise<SidecarTool[]> {
  let listed = new Map<string, { description?: string; inputSchema: Record<string, unknown> }>();
  try {
    const { tools } = await (await s.client()).listTools(undefined, { timeout: s.listTimeoutMs });
    listed = new Map(tools.map((t) => [t.name, t]));
  } catch {
    // listed anyway: calling one says why it fails
  }
  return s.tools.map((tool): SidecarTool => {
    const found = listed.get(tool);
    return {
      name: `${s.toolPrefix}__${tool}`,
      description: found?.description ?? `${tool} of ${s.packageId}`,
      inputSchema: found?.inputSchema ?? { type: 'object' },
      async call(args) {
        let result: McpToolResult;
        try {
          const options = s.callTimeoutMs === undefined ? undefined : { timeout: s.callTimeoutMs };
          result = (await (await s.client()).callTool({ name: tool, arguments: args }, undefined, options)) as McpToolResult;
        } catch (err) {
          return s.failure(err);
        }
        const raw = result.content ?? [];
        const content = s.clean ? s.clean(raw) : raw;
        const text = content.map((c) => (c.type === 'text' && typeof c.text === 'string' ? c.text : JSON.stringify(c))).join('\n');
        return { text, isError: result.isError === true, content };
      },
    };
  });
}
