// The sandbox images the docker backend starts, checked at boot: configured images must speak the
// platform's sandbox protocol (their label), else the worker refuses to start. With none
// configured, the images are built from this checkout when missing or older than its bundles
// (docker/build-images.sh: offline, from the machine's own node).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type Docker from 'dockerode';
import type { Logger } from '../../lib/log.ts';
import { PROTOCOL_LABEL, SANDBOX_PROTOCOL_VERSION } from '../../lib/sandbox-protocol.ts';

export const DEFAULT_SIDECAR_IMAGE = `agent-platform/sidecar:p${SANDBOX_PROTOCOL_VERSION}`;
import { DEFAULT_AGENT_IMAGE } from '../../lib/local-integration-images.ts';

export { DEFAULT_AGENT_IMAGE };

export interface SandboxImages {
  sidecarImage: string;
  agentImage: string;
}

async function labelsOf(docker: Docker, image: string): Promise<Record<string, string> | null> {
  try {
    return (await docker.getImage(image).inspect()).Config.Labels ?? {};
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return null;
    throw err;
  }
}

/** Throws when a configured image is missing or speaks another protocol version than this platform. */
export async function checkConfiguredImage(docker: Docker, setting: string, image: string): Promise<void> {
  const labels = await labelsOf(docker, image);
  if (!labels) throw new Error(`${setting}=${image}: no such image on this docker engine (docker/build-images.sh builds the images of this version)`);
  const version = labels[PROTOCOL_LABEL];
  if (version !== SANDBOX_PROTOCOL_VERSION) {
    throw new Error(
      `${setting}=${image} speaks sandbox protocol ${version ?? '(none: no ' + PROTOCOL_LABEL + ' label)'}, ` +
        `but this platform speaks version ${SANDBOX_PROTOCOL_VERSION}: deploy the platform, sidecar and agent images at one version`,
    );
  }
}

/** whether the default image holds the bundles dist/ has now (its label starts with their hash, as build-images.sh makes it) */
async function current(docker: Docker, image: string, bundles: string[]): Promise<boolean> {
  const labels = await labelsOf(docker, image);
  if (!labels || labels[PROTOCOL_LABEL] !== SANDBOX_PROTOCOL_VERSION) return false;
  let digest: string;
  try {
    const hash = createHash('sha256');
    for (const bundle of bundles) hash.update(readFileSync(bundle));
    digest = hash.digest('hex').slice(0, 16);
  } catch {
    return true; // no bundle here to compare with: the image stands
  }
  return (labels['org.agent-platform.bundle'] ?? '').startsWith(digest);
}

/**
 * The images to start: the configured ones (checked), else the defaults, built from local files
 * when missing or out of date.
 */
export async function ensureSandboxImages(
  docker: Docker,
  opts: { root: string; sidecarImage?: string; agentImage?: string; log?: Logger },
): Promise<SandboxImages> {
  if (opts.sidecarImage || opts.agentImage) {
    if (!opts.sidecarImage || !opts.agentImage) throw new Error('DOCKER_SIDECAR_IMAGE and DOCKER_AGENT_IMAGE are set together, or neither');
    await checkConfiguredImage(docker, 'DOCKER_SIDECAR_IMAGE', opts.sidecarImage);
    await checkConfiguredImage(docker, 'DOCKER_AGENT_IMAGE', opts.agentImage);
    return { sidecarImage: opts.sidecarImage, agentImage: opts.agentImage };
  }
  const dist = path.join(opts.root, 'dist');
  const ready =
    (await current(docker, DEFAULT_SIDECAR_IMAGE, [path.join(dist, 'sidecar.cjs')])) &&
    (await current(docker, DEFAULT_AGENT_IMAGE, [path.join(dist, 'agent-runtime.cjs'), path.join(dist, 'mcp-bridge.cjs')]));
  if (!ready) {
    opts.log?.info('building the sandbox images from local files (docker/build-images.sh)', { images: [DEFAULT_SIDECAR_IMAGE, DEFAULT_AGENT_IMAGE] });
    await new Promise<void>((resolve, reject) => {
      const child = spawn(path.join(opts.root, 'docker', 'build-images.sh'), ['sidecar', 'agent'], { cwd: opts.root, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (c: Buffer) => {
        output = (output + c.toString()).slice(-4000);
        for (const line of c.toString().split('\n').filter(Boolean)) opts.log?.info(line);
      });
      child.stderr.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-4000)));
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`docker/build-images.sh failed (${code}): ${output.trim()}`))));
    });
  }
  return { sidecarImage: DEFAULT_SIDECAR_IMAGE, agentImage: DEFAULT_AGENT_IMAGE };
}
