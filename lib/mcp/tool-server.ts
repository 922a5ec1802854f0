// The server side of MCP for a fixed set of tools: answers initialize, ping, tools/list and
// tools/call. It keeps no state between requests, so each one may arrive on its own (streamable
// HTTP without sessions) and one instance serves a whole run.
import {
  errorResponse,
  isJsonObject,
  JSON_RPC_ERROR,
  JsonRpcError,
  resultResponse,
  type JsonObject,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from './json-rpc.ts';
import { negotiateProtocolVersion } from './protocol-version.ts';
import type { McpImplementation, McpToolListing, McpToolResult } from './tool-shapes.ts';

export interface McpToolProvider {
  serverInfo: McpImplementation;
  tools: McpToolListing[];
  /**
   * Runs a tool. Arguments arrive as an object but are not checked against the tool's inputSchema:
   * each tool checks what it needs. An unknown name or a failing tool is the provider's to answer,
   * as an isError result the model can read.
   */
  callTool(name: string, args: Record<string, unknown>): Promise<McpToolResult> | McpToolResult;
}

export class McpToolServer {
  constructor(private readonly provider: McpToolProvider) {}

  /** The response to one request; a handler's failure becomes a JSON-RPC error, never a throw. */
  async answer(request: JsonRpcRequest): Promise<JsonRpcResponse> {
    try {
      return resultResponse(request.id, await this.resultOf(request.method, request.params ?? {}));
    } catch (err) {
      if (err instanceof JsonRpcError) return errorResponse(request.id, err.code, err.message, err.data);
      return errorResponse(request.id, JSON_RPC_ERROR.internalError, `Internal error: ${(err as Error)?.message ?? String(err)}`);
    }
  }

  private async resultOf(method: string, params: JsonObject): Promise<JsonObject> {
    switch (method) {
      case 'initialize':
        return this.initialize(params);
      case 'ping':
        return {};
      case 'tools/list':
        // every tool fits on one page: no nextCursor
        return { tools: this.provider.tools };
      case 'tools/call':
        return this.callTool(params);
      default:
        throw new JsonRpcError(JSON_RPC_ERROR.methodNotFound, `Method not found: ${method}`);
    }
  }

  private initialize(params: JsonObject): JsonObject {
    if (typeof params.protocolVersion !== 'string') {
      throw new JsonRpcError(JSON_RPC_ERROR.invalidParams, 'Invalid params: initialize needs a protocolVersion string');
    }
    return {
      protocolVersion: negotiateProtocolVersion(params.protocolVersion),
      capabilities: { tools: {} },
      serverInfo: this.provider.serverInfo,
    };
  }

  private async callTool(params: JsonObject): Promise<JsonObject> {
    const { name, arguments: args } = params;
    if (typeof name !== 'string') throw new JsonRpcError(JSON_RPC_ERROR.invalidParams, 'Invalid params: tools/call needs a tool name');
    if (args !== undefined && !isJsonObject(args)) {
      throw new JsonRpcError(JSON_RPC_ERROR.invalidParams, 'Invalid params: tool arguments must be an object');
    }
    return (await this.provider.callTool(name, args ?? {})) as JsonObject;
  }
}
