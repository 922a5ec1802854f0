// The shape of a tool the sidecar serves over MCP.

export interface ToolAnswer {
  text: string;
  isError?: boolean;
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
