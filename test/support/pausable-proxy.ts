// A TCP proxy on loopback that can stall the traffic it carries: the stand-in for a database that
// stops answering (a network partition, a stalled disk) without touching the shared server.
// While paused, established connections stay open and carry nothing either way, and new
// connections are accepted but wait; resume lets everything flow again.
import net from 'node:net';

export interface PausableProxy {
  /** 127.0.0.1 port to connect to instead of the upstream's */
  port: number;
  pause(): void;
  resume(): void;
  readonly paused: boolean;
  /** connections accepted so far (each kept until either side closes it) */
  readonly accepted: number;
  /**
   * connections accepted plus chunks clients sent so far: grows with each request a client makes,
   * on a new connection or on one it keeps alive (a long-lived client reuses its connections)
   */
  readonly activity: number;
  close(): Promise<void>;
}

interface Link {
  client: net.Socket;
  upstream: net.Socket | null;
  /** chunks read while paused, per direction, written on resume in order */
  toUpstream: Buffer[];
  toClient: Buffer[];
}

export async function startPausableProxy(upstream: { host: string; port: number }): Promise<PausableProxy> {
  let paused = false;
  let accepted = 0;
  let clientChunks = 0;
  const links = new Set<Link>();

  /** Forwards one direction; holds what arrives while paused, and honours backpressure. */
  function forward(link: Link, from: net.Socket, to: net.Socket, held: Buffer[]): void {
    from.on('data', (chunk: Buffer) => {
      if (from === link.client) clientChunks += 1;
      if (paused) {
        held.push(chunk);
        from.pause();
        return;
      }
      if (!to.write(chunk)) from.pause();
    });
    to.on('drain', () => {
      if (!paused) from.resume();
    });
    from.on('end', () => to.end());
    from.on('error', () => drop(link));
    from.on('close', () => drop(link));
  }

  function drop(link: Link): void {
    if (!links.delete(link)) return;
    link.client.destroy();
    link.upstream?.destroy();
  }

  function connect(link: Link): void {
    const up = net.connect(upstream.port, upstream.host);
    link.upstream = up;
    forward(link, link.client, up, link.toUpstream);
    forward(link, up, link.client, link.toClient);
    link.client.resume();
  }

  function flow(link: Link): void {
    if (!link.upstream) return connect(link);
    for (const chunk of link.toUpstream.splice(0)) link.upstream.write(chunk);
    for (const chunk of link.toClient.splice(0)) link.client.write(chunk);
    link.client.resume();
    link.upstream.resume();
  }

  const server = net.createServer((client) => {
    const link: Link = { client, upstream: null, toUpstream: [], toClient: [] };
    links.add(link);
    accepted += 1;
    client.on('error', () => drop(link));
    if (paused) {
      // accepted, but nothing is read until resume: the connection waits like a stalled server's
      client.pause();
      return;
    }
    connect(link);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });

  return {
    port: (server.address() as net.AddressInfo).port,
    get paused() {
      return paused;
    },
    get accepted() {
      return accepted;
    },
    get activity() {
      return accepted + clientChunks;
    },
    pause() {
      paused = true;
      for (const link of links) {
        link.client.pause();
        link.upstream?.pause();
      }
    },
    resume() {
      paused = false;
      for (const link of [...links]) flow(link);
    },
    close() {
      paused = false;
      for (const link of [...links]) drop(link);
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
