// A stand-in worker for the docker warm pool's crash test: a docker adapter with a pool of two
// fills it, gives one pooled pair to a run, prints the claimed and the waiting sandboxes as one
// JSON line, then idles until it is killed.
//   node --import tsx sandbox-docker-pool-host.ts <workDir> <eventsBaseUrl> <secret> <modelUrl>
import { createDockerAdapter } from '../../activities/sandbox/docker-adapter.ts';
import { AGENT_IMAGE, SIDECAR_IMAGE } from '../support/docker.ts';
import { aSandboxSpec } from './sandbox-process-harness.ts';

const [workDir, eventsBaseUrl, secret, modelUrl] = process.argv.slice(2);
const adapter = await createDockerAdapter({ workDir, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE, warmPool: 2, poolMemoryMb: 256 });
await adapter.whenWarm();
const pooled = adapter.warmSandboxes();
const spec = aSandboxSpec({ runId: 'run_docker_pool_crash', eventsBaseUrl, secret, modelUrl, memoryMb: 256, input: { summary: 'crash pears', count: 7 } });
const { sandboxId } = await adapter.start(spec);
process.stdout.write(`${JSON.stringify({ claimed: sandboxId, pooled, waiting: adapter.warmSandboxes() })}\n`);
setInterval(() => undefined, 60_000);
