// MCP's streamable HTTP transport, client side: each message is one POST; the answer to a request
// is either a JSON body or an event stream carrying the response among other messages. A session
// id the server hands out is sent back on every later request, and the negotiated revision too.
import { classifyJsonRpc, JsonRpcError, type JsonObject, type JsonRpcId, type JsonRpcResponse } from './json-rpc.ts';
import { readServerSentEvents } from './server-sent-events.ts';

/** as long as the official client waits by default: a tool may take its time */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
const CLOSE_TIMEOUT_MS = 2_000;
const MAX_ERROR_TEXT = 300;

export interface McpHttpClientOptions {
  /** how requests travel (a unix socket, a test double of the network ...); the global fetch by default */
  fetch?: typeof fetch;
  requestTimeoutMs?: number;
}

export class McpHttpConnection {
  private readonly fetch: typeof fetch;
  private readonly timeoutMs: number;
  private sessionId: string | undefined;
  private nextId = 1;
  /** sent as MCP-Protocol-Version once initialize has settled it */
  protocolVersion: string | undefined;

  constructor(
    readonly url: string,
    opts: McpHttpClientOptions = {},
  ) {
    this.fetch = opts.fetch ?? fetch;
    this.timeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  /** Sends a request and returns its result; a JSON-RPC error answer throws a JsonRpcError. */
  async request(method: string, params?: JsonObject): Promise<JsonObject> {
    const id = this.nextId++;
    const res = await this.post({ jsonrpc: '2.0', id, method, ...(params && { params }) });
    if (!res.ok) throw await this.httpFailure(method, res);
    const type = mediaTypeOf(res.headers.get('content-type'));
    let response: JsonRpcResponse | undefined;
    if (type === 'application/json') response = responseIn(await res.json(), id);
    else if (type === 'text/event-stream' && res.body) response = await responseInEvents(res.body, id);
    else {
      await res.body?.cancel();
      throw new Error(`MCP ${method}: the server answered ${res.status} with ${type || 'no content type'}, not a JSON-RPC response`);
    }
    if (!response) throw new Error(`MCP ${method}: the server's answer holds no response to request ${id}`);
    if ('error' in response) throw new JsonRpcError(response.error.code, `MCP ${method}: ${response.error.message}`, response.error.data);
    return response.result;
  }

  async notify(method: string, params?: JsonObject): Promise<void> {
    const res = await this.post({ jsonrpc: '2.0', method, ...(params && { params }) });
    if (!res.ok) throw await this.httpFailure(method, res);
    await res.body?.cancel();
  }

  /** Ends the server's session, when it keeps one; a server that refuses (405) or is gone is fine. */
  async close(): Promise<void> {
    const sessionId = this.sessionId;
    if (sessionId === undefined) return;
    this.sessionId = undefined;
    try {
      const res = await this.fetch(this.url, {
        method: 'DELETE',
        headers: this.headers({ 'mcp-session-id': sessionId }),
        signal: AbortSignal.timeout(CLOSE_TIMEOUT_MS),
      });
      await res.body?.cancel();
    } catch {
      // nothing left to clean up on our side
    }
  }

  private async post(message: JsonObject): Promise<Response> {
    const res = await this.fetch(this.url, {
      method: 'POST',
      headers: this.headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' }),
      body: JSON.stringify(message),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const sessionId = res.headers.get('mcp-session-id');
    if (sessionId) this.sessionId = sessionId;
    return res;
  }

  private headers(base: Record<string, string>): Record<string, string> {
    const headers = { ...base };
    if (this.sessionId !== undefined) headers['mcp-session-id'] = this.sessionId;
    if (this.protocolVersion !== undefined) headers['mcp-protocol-version'] = this.protocolVersion;
    return headers;
  }

  private async httpFailure(method: string, res: Response): Promise<Error> {
    const text = (await res.text().catch(() => '')).slice(0, MAX_ERROR_TEXT);
    return new Error(`MCP ${method}: the server answered HTTP ${res.status}${text ? `: ${text}` : ''}`);
  }
}

function mediaTypeOf(contentType: string | null): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

/** The response to request id in a JSON body: one message, or a batch of them. */
function responseIn(body: unknown, id: JsonRpcId): JsonRpcResponse | undefined {
  for (const value of Array.isArray(body) ? body : [body]) {
    const message = classifyJsonRpc(value);
    if (message?.kind === 'response' && message.message.id === id) return message.message;
  }
  return undefined;
}

/**
 * The response to request id among the stream's events. Notifications (progress, logs) and
 * requests the server sends first are passed over: this client declares no capability a server
 * could ask it to use. Reading stops at the response.
 */
async function responseInEvents(body: ReadableStream<Uint8Array>, id: JsonRpcId): Promise<JsonRpcResponse | undefined> {
  for await (const event of readServerSentEvents(body)) {
    if (event.event !== 'message') continue;
    let value: unknown;
    try {
      value = JSON.parse(event.data);
    } catch {
      continue;
    }
    const response = responseIn(value, id);
    if (response) return response;
  }
  return undefined;
}
