// A tiny HTTP CONNECT proxy on 127.0.0.1 for tests: it records every CONNECT (the authority asked
// for, the Proxy-Authorization sent, the port of the connection it opened), may demand Basic
// credentials (407 otherwise), and opens tunnels to loopback addresses only (403 for anything
// else: tests never reach other hosts).
import { createServer, type IncomingMessage } from 'node:http';
import net, { type AddressInfo } from 'node:net';

export interface ConnectRecord {
  authority: string;
  authorization: string | null;
  /** the proxy's own port on the tunnel it opened to the target (the peer port the target sees); null until open */
  tunnelPort: number | null;
}

export interface ConnectProxy {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  connects: ConnectRecord[];
  close(): Promise<void>;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|\[::1\])$/;

export async function startConnectProxy(opts: { port?: number; credentials?: { username: string; password: string } } = {}): Promise<ConnectProxy> {
  const connects: ConnectRecord[] = [];
  const sockets = new Set<net.Socket>();
  const expected = opts.credentials ? `Basic ${Buffer.from(`${opts.credentials.username}:${opts.credentials.password}`).toString('base64')}` : null;
  const server = createServer((_req, res) => {
    res.writeHead(405, { connection: 'close' });
    res.end('CONNECT only');
  });
  server.on('connect', (req: IncomingMessage, client: net.Socket, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    const authority = req.url ?? '';
    const authorization = req.headers['proxy-authorization'] ?? null;
    const record: ConnectRecord = { authority, authorization, tunnelPort: null };
    connects.push(record);
    if (expected && authorization !== expected) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const match = /^(.*):(\d+)$/.exec(authority);
    if (!match || !LOOPBACK.test(match[1])) {
      client.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const upstream = net.connect({ host: match[1].replace(/^\[(.*)\]$/, '$1'), port: Number(match[2]) });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    let open = false;
    upstream.once('connect', () => {
      open = true;
      record.tunnelPort = upstream.localPort ?? null;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => {
      if (open) client.destroy();
      else client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    connects,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
