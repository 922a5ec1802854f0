// A worker's data removed for good, as `docker/compose-down.sh -v` does after the stack is down:
// the sandboxes of its docker backend (containers, run networks, host firewall rules, folders),
// then its data directory. Runs as root, on the host's network namespace (the rules are the
// host's), with the Engine API's socket and the data directory at the worker's own path.
//   DATA_DIR=<the worker's> [DOCKER_SOCKET=...] node dist/remove-worker-data.js
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { DOCKER_WORK_FOLDER, removeDockerSandboxes } from '../activities/sandbox/docker-adapter.ts';

async function main(): Promise<void> {
  const configured = process.env.DATA_DIR;
  if (!configured) throw new Error('set DATA_DIR to the worker data directory to remove');
  const dataDir = path.resolve(configured);
  const removed = await removeDockerSandboxes({ workDir: path.join(dataDir, DOCKER_WORK_FOLDER), socketPath: process.env.DOCKER_SOCKET });
  await rm(dataDir, { recursive: true, force: true });
  process.stdout.write(`removed ${removed.length} sandbox(es) and ${dataDir}\n`);
}

main().catch((err) => {
  process.stderr.write(`remove-worker-data: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
