// The compose deployment's worker entry (docker/compose.yaml, service platform-worker): each replica
// of the service is its own sandbox host on the same machine, so it needs its own data directory,
// workflow port and advertised endpoint. This reads the replica's number from the engine (the
// compose label of its own container) and derives them, then starts the platform in this process:
//   replica 1: DATA_DIR, WORKER_PORT as given (a single worker keeps today's layout and port)
//   replica N: DATA_DIR/worker-N, WORKER_PORT + N - 1
//   every replica: WORKER_ENDPOINT_URL http://WORKER_HOST:<its port>, unless given
// Runs on the host's network with the engine's socket (as the worker does), so its container is
// found through /proc/self/mountinfo (the engine's per-container files are mounted from its folder).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const SOCKET = process.env.DOCKER_SOCKET ?? '/var/run/docker.sock';
const NUMBER_LABEL = 'com.docker.compose.container-number';

function ownContainerId() {
  const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  const found = /\/containers\/([0-9a-f]{64})\//.exec(mounts);
  if (!found) throw new Error('worker-entry: not in a container (no engine container folder in /proc/self/mountinfo)');
  return found[1];
}

function inspect(id) {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath: SOCKET, path: `/containers/${id}/json`, timeout: 10_000 }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`worker-entry: the engine answered ${res.statusCode} for container ${id}`));
        else resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      });
    });
    req.on('timeout', () => req.destroy(new Error('worker-entry: the engine did not answer')));
    req.on('error', reject);
  });
}

const container = await inspect(ownContainerId());
const replica = Number(container.Config?.Labels?.[NUMBER_LABEL] ?? '1');
if (!Number.isInteger(replica) || replica < 1) throw new Error(`worker-entry: unreadable replica number ${container.Config?.Labels?.[NUMBER_LABEL]}`);

const dataDir = process.env.DATA_DIR;
if (!dataDir || !path.isAbsolute(dataDir)) throw new Error('worker-entry: DATA_DIR must be an absolute path (the same on the host and in the worker)');
const basePort = Number(process.env.WORKER_PORT ?? '9080');
if (replica > 1) {
  process.env.DATA_DIR = path.join(dataDir, `worker-${replica}`);
  process.env.WORKER_PORT = String(basePort + replica - 1);
  fs.mkdirSync(process.env.DATA_DIR, { recursive: true, mode: 0o700 });
}
if (!process.env.WORKER_ENDPOINT_URL && process.env.WORKER_HOST) {
  process.env.WORKER_ENDPOINT_URL = `http://${process.env.WORKER_HOST}:${process.env.WORKER_PORT ?? basePort}`;
}
process.stdout.write(`worker-entry: replica ${replica}: DATA_DIR=${process.env.DATA_DIR} WORKER_PORT=${process.env.WORKER_PORT} WORKER_ENDPOINT_URL=${process.env.WORKER_ENDPOINT_URL ?? ''}\n`);

await import(pathToFileURL(path.resolve(path.dirname(new URL(import.meta.url).pathname), '../dist/platform.js')).href);
