// The shape of a tool the sidecar serves over MCP.
import type { McpToolResult } from '../lib/mcp/tool-shapes.ts';

export interface ToolAnswer {
  text: string;
  isError?: boolean;
  /** the content parts to answer with, when not the text alone (a remote MCP server's result) */
  content?: McpToolResult['content'];
}

export interface SidecarTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments; MCP requires type: object at the top */
  inputSchema: Record<string, unknown>;
  call(args: Record<string, unknown>): Promise<ToolAnswer> | ToolAnswer;
}

export function toolError(text: string): ToolAnswer {
  return { text, isError: true };
}
