// The MCP tool shapes both sides exchange: a listed tool and the result of a call. Only the fields
// this platform reads are typed; anything else a server sends passes through untouched.

export interface McpImplementation {
  name: string;
  version: string;
}

export interface McpToolListing {
  name: string;
  description?: string;
  /** JSON Schema of the arguments; MCP requires type: object at the top */
  inputSchema: Record<string, unknown>;
  [field: string]: unknown;
}

export interface McpTextContent {
  type: 'text';
  text: string;
}

export interface McpToolResult {
  /** text parts, or others (image, resource ...) this platform passes on as JSON */
  content: Array<McpTextContent | { type: string; [field: string]: unknown }>;
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  [field: string]: unknown;
}
