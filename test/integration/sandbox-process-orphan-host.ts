// A stand-in platform process for the orphan test: creates a process adapter, starts one sandbox,
// prints every pid it owns as one JSON line, then idles until it is killed.
//   node --import tsx sandbox-process-orphan-host.ts <workDir> <eventsBaseUrl> <secret> <modelUrl> <auto|off>
import { createProcessAdapter } from '../../activities/sandbox/process-adapter.ts';
import { aSandboxSpec } from './sandbox-process-harness.ts';

const [workDir, eventsBaseUrl, secret, modelUrl, confine] = process.argv.slice(2);
const adapter = await createProcessAdapter({ warmPool: 1, workDir, confine: confine === 'off' ? 'off' : 'auto' });
await adapter.whenWarm();
const spec = aSandboxSpec({ runId: 'run_orphan', eventsBaseUrl, secret, modelUrl });
// a model that never answers keeps the agent waiting mid-run
spec.sidecar.model = { ...spec.sidecar.model!, model: 'fake-hang' };
const { sandboxId } = await adapter.start(spec);
await adapter.whenWarm();
process.stdout.write(`${JSON.stringify({ sandboxId, ...adapter.processes(sandboxId), isolation: adapter.isolation })}\n`);
setInterval(() => undefined, 60_000);
