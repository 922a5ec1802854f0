// The sidecar as a long-lived host (the process backend): one process serves many runs, each in
// its own session: a SidecarHttpServer with the run's own token, secrets, egress guard, budgets,
// event signing and park handover, listening on its own 127.0.0.1 port and, for a confined agent,
// its own unix socket in that sandbox's ipc folder. Sessions share nothing of a run: every
// per-run object is built by the session from its assignment and dropped when it closes.
//
// Control channel: one JSON line per message on stdin, answers on stdout.
//   in   {"op":"open","id":S,"assignment":{...}}   out {"op":"opened","id":S,"port":N} | {"op":"refused","id":S,"error":"..."}
//   in   {"op":"close","id":S}                     out {"op":"closed","id":S}
//   in   {"op":"count"}                            out {"op":"count","sessions":N}
//   out  {"op":"end_held","id":S}   the session holds its run's end (the sandbox is "ending")
//   out  {"op":"lost","id":S}       the run's end could not be delivered: the session is gone
// The host ends when stdin closes: the worker that started it is gone.
import { parseAssignment } from './assignment.ts';
import { SidecarHttpServer } from './http-server.ts';
import { prepareOutputValidator } from './output-validator.ts';
import { requestText } from '../lib/outbound-http.ts';
import { announceReady } from '../lib/warm-start.ts';

/** control lines longer than this are not assignments: the host drops them rather than grow */
const MAX_CONTROL_LINE = 8 * 1024 * 1024;

function say(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

export async function serveAsHost(): Promise<void> {
  prepareOutputValidator();
  const sessions = new Map<string, SidecarHttpServer>();

  // node's HTTP client is exercised once, so the first run's first event does not pay for loading it
  const warm = new SidecarHttpServer();
  const warmPort = await warm.listen();
  await requestText(`http://127.0.0.1:${warmPort}/warm`).catch(() => undefined);
  await warm.shutdown();

  const close = async (id: string): Promise<void> => {
    const session = sessions.get(id);
    sessions.delete(id);
    await session?.shutdown().catch(() => undefined);
  };

  const open = async (id: string, raw: unknown): Promise<void> => {
    if (sessions.has(id)) return say({ op: 'refused', id, error: 'a session with this id is open' });
    const session = new SidecarHttpServer();
    sessions.set(id, session);
    try {
      const assignment = parseAssignment(JSON.stringify(raw));
      const port = await session.listen();
      if (assignment.socketPath) await session.listenOnSocket(assignment.socketPath);
      // closed meanwhile (the sandbox stopped during the open)
      if (sessions.get(id) !== session) return void (await session.shutdown());
      session.assign(assignment, {
        onEnd: () => say({ op: 'end_held', id }),
        onEndUndelivered: () => {
          if (sessions.get(id) !== session) return;
          say({ op: 'lost', id });
          void close(id);
        },
      });
      say({ op: 'opened', id, port });
    } catch (err) {
      await close(id);
      // the message names fields only: the assignment holds secrets
      say({ op: 'refused', id, error: (err as Error).message });
    }
  };

  const handle = (line: string): void => {
    let message: { op?: unknown; id?: unknown; assignment?: unknown };
    try {
      message = JSON.parse(line) as typeof message;
    } catch {
      process.stderr.write('sidecar host: a control line is not JSON\n');
      return;
    }
    const id = typeof message.id === 'string' ? message.id : '';
    if (message.op === 'open' && id) void open(id, message.assignment);
    else if (message.op === 'close' && id) void close(id).then(() => say({ op: 'closed', id }));
    else if (message.op === 'count') say({ op: 'count', sessions: sessions.size });
    else process.stderr.write(`sidecar host: unknown control message ${JSON.stringify(String(message.op))}\n`);
  };

  let buffered = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    buffered += chunk;
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim() !== '') handle(line);
    }
    if (buffered.length > MAX_CONTROL_LINE) buffered = '';
  });
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  announceReady({ host: true });
}
