// The client side of MCP for an agent that only uses tools: the initialize handshake, the tool
// list (every page of it) and tool calls, over streamable HTTP.
import { isJsonObject } from './json-rpc.ts';
import { isSupportedProtocolVersion, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from './protocol-version.ts';
import { McpHttpConnection, type McpHttpClientOptions } from './streamable-http-client.ts';
import type { McpImplementation, McpToolListing, McpToolResult } from './tool-shapes.ts';

/** a server that keeps handing out cursors is broken, not large */
const MAX_TOOL_PAGES = 1000;

export interface McpToolClientOptions extends McpHttpClientOptions {
  clientInfo: McpImplementation;
}

export class McpToolClient {
  private constructor(
    private readonly connection: McpHttpConnection,
    readonly serverInfo: McpImplementation | undefined,
  ) {}

  /** Initializes a session with the server at url (its MCP endpoint) and confirms it. */
  static async connect(url: string, opts: McpToolClientOptions): Promise<McpToolClient> {
    const connection = new McpHttpConnection(url, opts);
    const init = await connection.request('initialize', {
      protocolVersion: LATEST_PROTOCOL_VERSION,
      // tools need nothing from the client: no roots, sampling or elicitation
      capabilities: {},
      clientInfo: opts.clientInfo,
    });
    if (!isSupportedProtocolVersion(init.protocolVersion)) {
      await connection.close();
      throw new Error(
        `MCP initialize: the server speaks protocol ${String(init.protocolVersion)}, not one of ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
      );
    }
    connection.protocolVersion = init.protocolVersion as string;
    try {
      await connection.notify('notifications/initialized');
    } catch (err) {
      await connection.close();
      throw err;
    }
    return new McpToolClient(connection, isJsonObject(init.serverInfo) ? (init.serverInfo as unknown as McpImplementation) : undefined);
  }

  /** Every tool the server offers, following nextCursor across pages. */
  async listTools(): Promise<McpToolListing[]> {
    const tools: McpToolListing[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = await this.connection.request('tools/list', cursor === undefined ? undefined : { cursor });
      if (!Array.isArray(result.tools)) throw new Error('MCP tools/list: the answer holds no tools array');
      for (const tool of result.tools) {
        if (!isJsonObject(tool) || typeof tool.name !== 'string' || !isJsonObject(tool.inputSchema)) {
          throw new Error('MCP tools/list: a tool lacks a name or an inputSchema object');
        }
        tools.push(tool as McpToolListing);
      }
      cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
      if (cursor === undefined) return tools;
      if (seen.has(cursor)) throw new Error('MCP tools/list: the server repeated a cursor');
      seen.add(cursor);
    }
    throw new Error(`MCP tools/list: more than ${MAX_TOOL_PAGES} pages`);
  }

  /** Calls a tool; a failing tool answers isError: true (it does not throw), a refused call throws. */
  async callTool(name: string, args: Record<string, unknown>): Promise<McpToolResult> {
    const result = await this.connection.request('tools/call', { name, arguments: args });
    return { ...result, content: Array.isArray(result.content) ? result.content : [] };
  }

  close(): Promise<void> {
    return this.connection.close();
  }
}
