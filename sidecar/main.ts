// The per-run sidecar. Started ahead of need (warm pool): it loads everything, listens on
// 127.0.0.1, prints {"ready":true,"port":N}, then takes its run assignment as one line on stdin.
import { parseAssignment } from './assignment.ts';
import { SidecarHttpServer } from './http-server.ts';
import { announceReady, readFirstLine, warmFetch } from './warm-start.ts';

await warmFetch();
const sidecar = new SidecarHttpServer();
const port = await sidecar.listen();
announceReady({ port });

let line: string;
try {
  line = await readFirstLine();
} catch {
  process.exit(0);
}
try {
  sidecar.assign(parseAssignment(line));
} catch (err) {
  // the message names fields only: the assignment holds secrets
  process.stderr.write(`sidecar: ${(err as Error).message}\n`);
  process.exit(2);
}
