// A rehearsal run of a sandbox pair, made once per bundle so that the programs' code caches hold
// the code a whole run compiles (the model loop, MCP, the tools, event posting), not only their
// start-up: every later sandbox then skips those compilations. The platform plays every other
// part on 127.0.0.1: a scripted model (a log call, an output call, a final answer) and an event
// sink that takes whatever it is sent. Both programs run unconfined here, on inputs of ours only,
// and each writes its cache as it exits (bin/cached-program.ts --write).
import { randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readBody } from '../../lib/outbound-http.ts';
import { spawnPrograms, type ProgramProcess } from './program-process.ts';
import { writeWorkspace } from './workspace-writer.ts';

const STEP_TIMEOUT_MS = 30_000;
const OUTPUT_SCHEMA = { type: 'object', properties: { echo: { type: 'string' } }, required: ['echo'], additionalProperties: false };

/** The model's turn for a conversation that already holds `toolResults` tool results. */
function scriptedTurn(toolResults: number): object {
  const call = (name: string, args: object) => ({
    role: 'assistant',
    content: null,
    tool_calls: [{ id: `call_${toolResults}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
  });
  if (toolResults === 0) return { message: call('log', { message: 'rehearsal' }), finish_reason: 'tool_calls' };
  if (toolResults === 1) return { message: call('output', { echo: 'rehearsal' }), finish_reason: 'tool_calls' };
  return { message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' };
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The scripted model and the event sink, on one loopback port. */
async function standIns(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    const body = await readBody(req).then((b) => b.toString('utf8'), () => '');
    if (req.method === 'POST' && req.url === '/v1/chat/completions') {
      let toolResults = 0;
      try {
        toolResults = (JSON.parse(body).messages as Array<{ role?: string }>).filter((m) => m.role === 'tool').length;
      } catch {
        // a malformed request still gets the first turn
      }
      const turn = scriptedTurn(toolResults);
      answer(res, 200, {
        id: `chatcmpl_${toolResults}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: 'rehearsal',
        choices: [{ index: 0, ...turn }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
    } else if (req.method === 'GET') {
      answer(res, 200, { object: 'list', data: [] });
    } else {
      answer(res, 202, {});
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * Runs the pair once on a scripted run; `argv` starts each program in its cache-writing mode.
 * Resolves once both programs have exited.
 */
export async function rehearsePair(node: string, argv: { sidecar: string[]; agent: string[] }): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sandbox-rehearsal-'));
  const workspace = path.join(dir, 'workspace');
  const stand = await standIns();
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir };
  let programs: ProgramProcess[];
  try {
    programs = await spawnPrograms([['sidecar', node, argv.sidecar, { cwd: dir, env }], ['agent-runtime', node, argv.agent, { cwd: dir, env }]]);
  } catch (err) {
    await stand.close();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const [sidecar, agent] = programs;
  try {
    await mkdir(workspace);
    await writeWorkspace(workspace, [
      { path: 'prompt.md', content: Buffer.from('Log one line, then report {"echo": "rehearsal"} as your output.') },
      { path: 'input.json', content: Buffer.from('{"message":"rehearsal"}') },
    ]);
    const ready = await sidecar.nextLine(STEP_TIMEOUT_MS);
    await agent.nextLine(STEP_TIMEOUT_MS);
    const token = randomBytes(32).toString('base64url');
    sidecar.send({
      runId: 'run_rehearsal', eventsUrl: `${stand.url}/events`, eventSecret: `whsec_${randomBytes(24).toString('base64')}`, token,
      model: { baseUrl: `${stand.url}/v1`, apiKey: 'rehearsal', model: 'rehearsal' }, egressAllowInternalHosts: [new URL(stand.url).host],
      outputSchema: OUTPUT_SCHEMA, runtimeTools: ['output', 'log'], heartbeatSeconds: 5,
      historyUrl: `${stand.url}/history`, memoryUrl: `${stand.url}/memory`, filesDir: dir,
    });
    const ack = await sidecar.nextLine(STEP_TIMEOUT_MS);
    if (ack.assigned !== true) throw new Error('the sidecar did not take the rehearsal');
    agent.send({ workspace, sidecarUrl: `http://127.0.0.1:${ready.port}`, sidecarToken: token });
    const timedOut = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the rehearsal run did not end')), STEP_TIMEOUT_MS).unref());
    await Promise.race([agent.exited, timedOut]);
  } finally {
    // SIGTERM ends a cache-writing program through its exit, which writes the cache
    await Promise.all([sidecar.terminate(STEP_TIMEOUT_MS), agent.terminate(STEP_TIMEOUT_MS)]);
    await stand.close();
    await rm(dir, { recursive: true, force: true });
  }
}
