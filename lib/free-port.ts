import { createServer } from 'node:net';

// Ports are picked below Linux's ephemeral range (32768-60999 by default): a port the OS hands out
// for port 0 is also what it hands to the next outgoing connection, so between this check and the
// bind by its user (an embedded Restate, a test server) another process's connection could take
// it. Below the range only another listener can, and a listener is what the check looks for.
const LOW = 20_000;
const HIGH = 32_768;
const ATTEMPTS = 64;

function tryListen(port: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' || err.code === 'EACCES' ? resolve(null) : reject(err)));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the port the OS assigned'));
        return;
      }
      const { port: bound } = address;
      server.close((err) => (err ? reject(err) : resolve(bound)));
    });
  });
}

/** A TCP port that was free on 127.0.0.1 a moment ago, outside the range outgoing connections use. */
export async function freePort(): Promise<number> {
  for (let i = 0; i < ATTEMPTS; i++) {
    const port = await tryListen(LOW + Math.floor(Math.random() * (HIGH - LOW)));
    if (port !== null) return port;
  }
  // a crowded low range: let the OS pick
  const port = await tryListen(0);
  if (port === null) throw new Error('no free port on 127.0.0.1');
  return port;
}
