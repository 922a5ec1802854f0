// JSON-RPC 2.0 messages as MCP uses them: requests and notifications carry an object of params
// (or none), ids are strings or numbers, never null on a request.

export type JsonRpcId = string | number;
export type JsonObject = Record<string, unknown>;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: JsonObject;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: JsonObject;
}

export interface JsonRpcErrorBody {
  code: number;
  message: string;
  data?: unknown;
}

export type JsonRpcResponse =
  | { jsonrpc: '2.0'; id: JsonRpcId; result: JsonObject }
  | { jsonrpc: '2.0'; id: JsonRpcId | null; error: JsonRpcErrorBody };

export type JsonRpcMessage =
  | { kind: 'request'; message: JsonRpcRequest }
  | { kind: 'notification'; message: JsonRpcNotification }
  | { kind: 'response'; message: JsonRpcResponse };

/** The error codes JSON-RPC reserves, plus the one MCP's HTTP transport uses for transport-level refusals. */
export const JSON_RPC_ERROR = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  transportRefusal: -32000,
} as const;

/** A JSON-RPC error answer from the other side, or one a handler raises to answer with. */
export class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'JsonRpcError';
  }
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

/** Sorts a parsed value into request, notification or response; undefined when it is none of them. */
export function classifyJsonRpc(value: unknown): JsonRpcMessage | undefined {
  if (!isJsonObject(value) || value.jsonrpc !== '2.0') return undefined;
  if (typeof value.method === 'string') {
    if (value.params !== undefined && !isJsonObject(value.params)) return undefined;
    if (!('id' in value)) return { kind: 'notification', message: value as unknown as JsonRpcNotification };
    return isId(value.id) ? { kind: 'request', message: value as unknown as JsonRpcRequest } : undefined;
  }
  if (('result' in value) === ('error' in value)) return undefined; // exactly one of them
  if ('result' in value) return isId(value.id) && isJsonObject(value.result) ? { kind: 'response', message: value as unknown as JsonRpcResponse } : undefined;
  const error = value.error;
  const wellFormed = isJsonObject(error) && Number.isInteger(error.code) && typeof error.message === 'string';
  return wellFormed && (value.id === null || isId(value.id)) ? { kind: 'response', message: value as unknown as JsonRpcResponse } : undefined;
}

/** The id of a message too malformed to classify, when it has a usable one (else null, as JSON-RPC asks). */
export function idOf(value: unknown): JsonRpcId | null {
  return isJsonObject(value) && isId(value.id) ? value.id : null;
}

export function resultResponse(id: JsonRpcId, result: JsonObject): JsonRpcResponse {
  return { jsonrpc: '2.0', id, result };
}

export function errorResponse(id: JsonRpcId | null, code: number, message: string, data?: unknown): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}
