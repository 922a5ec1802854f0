// The per-run sidecar. Started ahead of need (warm pool): it loads everything, listens on
// 127.0.0.1, prints {"ready":true,"port":N}, then takes its run assignment as one line on stdin
// and answers {"assigned":true} once it serves the run (on its socketPath too, when given).
// It ends when stdin closes: the parent that started it is gone.
// With SIDECAR_MODE=host it is instead the process backend's long-lived host of many runs (host.ts).
import { parseAssignment } from './assignment.ts';
import { serveAsHost } from './host.ts';
import { SidecarHttpServer } from './http-server.ts';
import { prepareOutputValidator } from './output-validator.ts';
import { requestText } from '../lib/outbound-http.ts';
import { announceEndHeld, announceReady, exitWhenStdinEnds, readFirstLine } from '../lib/warm-start.ts';

// No top-level await: the program is bundled as CommonJS so its compiled code can be cached
// (bin/cached-program.ts).
async function main(): Promise<void> {
  prepareOutputValidator();
  const sidecar = new SidecarHttpServer();
  // the docker backend's agent is in another container: SIDECAR_LISTEN_HOST=0.0.0.0 (its networks
  // hold only its agent and, with inter-container traffic off, the egress network)
  const port = await sidecar.listen(process.env.SIDECAR_LISTEN_HOST || undefined);
  // node's HTTP client (no fetch: lib/outbound-http.ts) runs once against our own port, so the
  // run's first event does not pay for loading it
  await requestText(`http://127.0.0.1:${port}/warm`).catch(() => undefined);
  announceReady({ port });

  let line: string;
  try {
    line = await readFirstLine();
  } catch {
    process.exit(0);
  }
  try {
    const assignment = parseAssignment(line);
    if (assignment.socketPath) await sidecar.listenOnSocket(assignment.socketPath);
    sidecar.assign(assignment, {
      // the parent counts the sandbox alive while this process holds the run's end, agent gone or not;
      // the docker backend's worker reads it from SIDECAR_STATE_DIR, which outlives its attach stream
      onEnd: () => announceEndHeld(process.env.SIDECAR_STATE_DIR || undefined),
      // an end that cannot be delivered leaves nothing to serve: the parent sees the sandbox gone
      onEndUndelivered: () => process.exit(3),
    });
  } catch (err) {
    // the message names fields only: the assignment holds secrets
    process.stderr.write(`sidecar: ${(err as Error).message}\n`);
    process.exit(2);
  }
  process.stdout.write(`${JSON.stringify({ assigned: true })}\n`);
  exitWhenStdinEnds();
}

void (process.env.SIDECAR_MODE === 'host' ? serveAsHost() : main());
