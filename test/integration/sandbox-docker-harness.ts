// What the docker backend's adapter tests share: a scripted model, an event receiver, an adapter on
// a work folder of its own, a service of the host on every address (what no container may reach),
// and probes run inside a container with `docker exec`.
import { createServer, type Server } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import { createDockerAdapter, removeDockerSandboxes, type DockerAdapterOptions, type DockerSandboxAdapter } from '../../activities/sandbox/docker-adapter.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { AGENT_IMAGE, SIDECAR_IMAGE } from '../support/docker.ts';
import { startEventReceiver, type EventReceiver } from './sidecar-run-harness.ts';

export interface DockerWorld {
  model: FakeModel;
  receiver: EventReceiver;
  secret: string;
  adapter: DockerSandboxAdapter;
  workDir: string;
  /** a TCP service of the host listening on 0.0.0.0 */
  hostPort: number;
  /** the run's events the receiver accepted, in order */
  eventsOf(runId: string): NonNullable<EventReceiver['deliveries'][number]['event']>[];
  /** stops this adapter's sandboxes, removes whatever a failed test left in its work folder */
  close(): Promise<void>;
}

export async function aDockerWorld(folderPrefix: string, adapterOptions: Partial<DockerAdapterOptions> = {}): Promise<DockerWorld> {
  const secret = newRunEventSecret();
  const model = await startFakeModel({});
  const receiver = await startEventReceiver(secret);
  const workDir = await mkdtemp(join(tmpdir(), folderPrefix));
  const adapter = await createDockerAdapter({ workDir, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE, ...adapterOptions });
  const hostListener: Server = createServer((s) => s.end('host service\n'));
  await new Promise<void>((resolve) => hostListener.listen(0, '0.0.0.0', resolve));
  return {
    model,
    receiver,
    secret,
    adapter,
    workDir,
    hostPort: (hostListener.address() as { port: number }).port,
    eventsOf: (runId) => receiver.deliveries.filter((d) => d.path.includes(`/runs/${runId}/`) && d.status < 300).flatMap((d) => d.events ?? []),
    async close() {
      for (const s of adapter.sandboxes()) await adapter.stop(s.sandboxId);
      await adapter.close();
      await removeDockerSandboxes({ workDir });
      await receiver.close();
      await model.close();
      hostListener.close();
      await rm(workDir, { recursive: true, force: true });
    },
  };
}

/** Runs a node script in a container as its own user; answers what it prints, read as JSON. */
export async function execNode(docker: Docker, container: string, script: string): Promise<any> {
  const exec = await docker.getContainer(container).exec({ Cmd: ['/usr/bin/node', '-e', script], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString()));
  docker.modem.demuxStream(stream, out, new PassThrough());
  await new Promise((resolve) => stream.on('end', resolve));
  return JSON.parse(text);
}

/** node source that tries a TCP connection to each target and prints {target: 'connected' | error code} */
export const probeScript = (targets: string[]) => `
const net = require('net');
Promise.all(${JSON.stringify(targets)}.map((t) => new Promise((resolve) => {
  const i = t.lastIndexOf(':');
  const s = net.connect({ host: t.slice(0, i), port: Number(t.slice(i + 1)) });
  const done = (r) => { s.destroy(); resolve([t, r]); };
  s.setTimeout(1000, () => done('timeout'));
  s.on('connect', () => done('connected'));
  s.on('error', (e) => done(e.code || 'error'));
}))).then((r) => console.log(JSON.stringify(Object.fromEntries(r))));`;
