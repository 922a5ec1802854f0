// The docker backend's tests need a Docker engine and the sandbox images. Like bubblewrap for the
// process backend: under CI (or REQUIRE_DOCKER=1) both are required (.ci/run installs and starts
// docker); elsewhere a test starts dockerd itself when it is installed and this user may, and is
// reported as not applicable (a passing check that says so) when there is no docker at all.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, openSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { ownedBy, sandboxRun } from '../../activities/sandbox/docker-adoption.ts';
import { LABEL_SANDBOX } from '../../activities/sandbox/docker-specs.ts';
import { SANDBOX_PROTOCOL_VERSION } from '../../lib/sandbox-protocol.ts';

export const DOCKER_REQUIRED = process.env.CI === 'true' || process.env.REQUIRE_DOCKER === '1';
export const SIDECAR_IMAGE = `agent-platform/sidecar:p${SANDBOX_PROTOCOL_VERSION}`;
export const AGENT_IMAGE = `agent-platform/agent:p${SANDBOX_PROTOCOL_VERSION}`;
const REPO = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');

async function pings(docker: Docker): Promise<boolean> {
  try {
    await docker.ping();
    return true;
  } catch {
    return false;
  }
}

function which(program: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${program}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

let ready: Promise<string | null> | undefined;

/**
 * null when docker can be used here (the images built); otherwise why not. Throws under CI when
 * docker is missing: the docker backend's tests must run there.
 */
export function dockerForTests(): Promise<string | null> {
  ready ??= (async () => {
    const docker = new Docker();
    if (!(await pings(docker))) {
      const dockerd = which('dockerd');
      if (!dockerd || process.getuid?.() !== 0) {
        const why = dockerd ? 'dockerd is not running and this user cannot start it' : 'docker is not installed';
        if (DOCKER_REQUIRED) throw new Error(`CI runs the docker backend's tests: ${why} (.ci/run installs and starts it)`);
        return why;
      }
      // started detached: it outlives the test run, like the engine a machine would run anyway
      const log = openSync('/tmp/agent-platform-dockerd.log', 'a');
      spawn(dockerd, [], { detached: true, stdio: ['ignore', log, log] }).unref();
      for (let i = 0; i < 100 && !(await pings(docker)); i++) await new Promise((r) => setTimeout(r, 200));
      if (!(await pings(docker))) throw new Error('dockerd did not come up within 20 s (see /tmp/agent-platform-dockerd.log)');
    }
    const built = spawnSync(path.join(REPO, 'docker', 'build-images.sh'), ['sidecar', 'agent'], { cwd: REPO, encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`the sandbox images could not be built: ${built.stderr.slice(-2000)}`);
    if (!existsSync('/var/run/docker.sock')) throw new Error('no /var/run/docker.sock');
    return null;
  })();
  return ready;
}

/**
 * The containers of a work folder's sandboxes that serve `runId`: labelled with the run, or a
 * pooled pair whose claim names it; `null` for the pooled pairs no run claimed.
 */
export async function containersOfRun(docker: Docker, workDir: string, runId: string | null): Promise<Docker.ContainerInfo[]> {
  const owned = ownedBy(workDir);
  const found: Docker.ContainerInfo[] = [];
  for (const c of await docker.listContainers({ all: true, filters: { label: [LABEL_SANDBOX] } })) {
    const sandboxId = c.Labels[LABEL_SANDBOX];
    if (!(await owned(sandboxId))) continue;
    if ((await sandboxRun(path.join(workDir, path.basename(sandboxId)), c.Labels)) === runId) found.push(c);
  }
  return found;
}
