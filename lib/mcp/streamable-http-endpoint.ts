// MCP's streamable HTTP transport, server side, in its simplest conforming form: stateless (no
// Mcp-Session-Id, so a restarted or reconnecting client never meets a stale session) and answering
// every POST with plain JSON (no SSE stream: these tools never notify or ask back mid-call).
// Framework-free: it takes the request's parts and returns the answer's, for any HTTP server.
import { classifyJsonRpc, errorResponse, idOf, JSON_RPC_ERROR, type JsonRpcMessage, type JsonRpcResponse } from './json-rpc.ts';
import { isSupportedProtocolVersion, SUPPORTED_PROTOCOL_VERSIONS } from './protocol-version.ts';
import type { McpToolServer } from './tool-server.ts';

/** the 2025-03-26 revision allows batches; a bound keeps one POST from queueing unbounded work */
export const MAX_BATCH_MESSAGES = 100;

export interface McpHttpRequest {
  method: string;
  /** a request header by lower-case name */
  header(name: string): string | undefined;
  body: string;
}

export interface McpHttpAnswer {
  status: number;
  headers: Record<string, string>;
  /** absent for 202 Accepted */
  body?: string;
}

function json(status: number, value: unknown, extraHeaders: Record<string, string> = {}): McpHttpAnswer {
  return { status, headers: { 'content-type': 'application/json', ...extraHeaders }, body: JSON.stringify(value) };
}

function refusal(status: number, code: number, message: string, id: JsonRpcResponse['id'] = null): McpHttpAnswer {
  return json(status, errorResponse(id, code, message));
}

function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

/** Parses, checks and answers one HTTP request to the MCP endpoint. */
export async function answerMcpHttp(server: McpToolServer, request: McpHttpRequest): Promise<McpHttpAnswer> {
  if (request.method !== 'POST') {
    // stateless: no standalone SSE stream to GET and no session to DELETE
    return { ...refusal(405, JSON_RPC_ERROR.transportRefusal, 'Method not allowed.'), headers: { allow: 'POST', 'content-type': 'application/json' } };
  }
  // the transport requires clients to take either answer form, even though this server only sends JSON
  const accept = (request.header('accept') ?? '').toLowerCase();
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return refusal(406, JSON_RPC_ERROR.transportRefusal, 'Not Acceptable: Client must accept both application/json and text/event-stream');
  }
  if (mediaTypeOf(request.header('content-type')) !== 'application/json') {
    return refusal(415, JSON_RPC_ERROR.transportRefusal, 'Unsupported Media Type: Content-Type must be application/json');
  }

  let parsed: unknown;
  try {
    parsed = JSON.parse(request.body);
  } catch {
    return refusal(400, JSON_RPC_ERROR.parseError, 'Parse error: Invalid JSON');
  }
  const batch = Array.isArray(parsed);
  const raw = batch ? (parsed as unknown[]) : [parsed];
  if (raw.length === 0) return refusal(400, JSON_RPC_ERROR.invalidRequest, 'Invalid Request: empty batch');
  if (raw.length > MAX_BATCH_MESSAGES) {
    return refusal(400, JSON_RPC_ERROR.invalidRequest, `Invalid Request: a batch holds at most ${MAX_BATCH_MESSAGES} messages`);
  }
  const messages: JsonRpcMessage[] = [];
  for (const value of raw) {
    const message = classifyJsonRpc(value);
    // one bad message refuses the whole POST: nothing in it has run yet
    if (!message) return refusal(400, JSON_RPC_ERROR.invalidRequest, 'Invalid Request: not a JSON-RPC 2.0 message', batch ? null : idOf(value));
    messages.push(message);
  }

  const initializing = messages.some((m) => m.kind === 'request' && m.message.method === 'initialize');
  if (initializing && messages.length > 1) {
    return refusal(400, JSON_RPC_ERROR.invalidRequest, 'Invalid Request: initialize must be sent on its own');
  }
  // after initialize, clients name the negotiated revision; one this server does not speak is refused
  const version = request.header('mcp-protocol-version');
  if (!initializing && version !== undefined && !isSupportedProtocolVersion(version)) {
    return refusal(
      400,
      JSON_RPC_ERROR.transportRefusal,
      `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    );
  }

  const requests = messages.flatMap((m) => (m.kind === 'request' ? [m.message] : []));
  // notifications (initialized, cancelled ...) and responses need no answer: this server sent no request
  if (requests.length === 0) return { status: 202, headers: {} };
  const responses: JsonRpcResponse[] = [];
  // one at a time, in the order sent: tools such as note answer with what earlier calls recorded
  for (const r of requests) responses.push(await server.answer(r));
  return json(200, batch ? responses : responses[0]);
}
