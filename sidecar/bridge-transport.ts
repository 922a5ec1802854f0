// An MCP SDK client transport to a local integration's bridge (bin/mcp-bridge.ts): one TCP
// connection, whose first line presents the bridge's token and whose first answer is
// {"bridge":"ready"}; then newline-delimited JSON-RPC, as the server speaks it on its stdio.
import net from 'node:net';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** a line longer than this ends the connection (a server answering without end) */
const MAX_LINE_BYTES = 32 * 1024 * 1024;

export class BridgeTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private socket: net.Socket | null = null;
  private closed = false;

  /** trust: the certificate authority (PEM) the server's runtime is to trust, named in the handshake (the bridge starts the server with it) */
  constructor(private readonly bridge: { host: string; port: number; token: string }, private readonly timeoutMs: number, private readonly trust?: string) {}

  start(): Promise<void> {
    if (this.socket) return Promise.reject(new Error('the bridge transport is started already'));
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: this.bridge.host, port: this.bridge.port });
      this.socket = socket;
      let pending = '';
      let handshaken = false;
      const timer = setTimeout(() => socket.destroy(new Error(`the bridge at ${this.bridge.host} did not answer in time`)), this.timeoutMs);
      socket.setEncoding('utf8');
      socket.on('connect', () => socket.write(`${JSON.stringify({ token: this.bridge.token, ...(this.trust ? { trust: this.trust } : {}) })}\n`));
      socket.on('data', (chunk: string) => {
        pending += chunk;
        if (pending.length > MAX_LINE_BYTES) {
          socket.destroy(new Error('the local MCP server sent an overlong line'));
          return;
        }
        let newline: number;
        while ((newline = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, newline).replace(/\r$/, '');
          pending = pending.slice(newline + 1);
          if (!handshaken) {
            if (line !== '{"bridge":"ready"}') {
              socket.destroy(new Error('the bridge refused the connection'));
              return;
            }
            handshaken = true;
            clearTimeout(timer);
            resolve();
            continue;
          }
          if (line.trim() === '') continue;
          let message: JSONRPCMessage;
          try {
            message = JSON.parse(line) as JSONRPCMessage;
          } catch {
            this.onerror?.(new Error('the local MCP server wrote a line that is not JSON'));
            continue;
          }
          this.onmessage?.(message);
        }
      });
      socket.on('error', (err) => {
        if (!handshaken) reject(err);
        else this.onerror?.(err);
      });
      socket.on('close', () => {
        clearTimeout(timer);
        if (!handshaken) reject(new Error(`the bridge at ${this.bridge.host} closed the connection`));
        this.finish();
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const socket = this.socket;
    if (!socket || socket.destroyed) return Promise.reject(new Error('the local MCP server is not connected'));
    return new Promise((resolve, reject) => socket.write(`${JSON.stringify(message)}\n`, (err) => (err ? reject(err) : resolve())));
  }

  async close(): Promise<void> {
    this.socket?.destroy();
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }
}
