// The agent's workspace tools in a real process sandbox: a skill whose SKILL.md says to run
// scripts/count.sh, run by the scripted model's tool calls under bubblewrap; an agent trying to
// leave its workspace or reach the network; and the shell's absence on an unconfined sandbox
// unless SANDBOX_UNCONFINED_SHELL_UNSAFE is set.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { SandboxSpec } from '../../activities/sandbox/adapter.ts';
import { findBubblewrap } from '../../activities/sandbox/confinement.ts';
import { createProcessAdapter, type ProcessSandboxAdapter } from '../../activities/sandbox/process-adapter.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { running } from './sandbox-process-harness.ts';
import { REPO, startEventReceiver, waitUntil, type EventReceiver } from './sidecar-run-harness.ts';

const bwrap = findBubblewrap();

const resultSchema = {
  type: 'object',
  properties: { result: { type: 'string' } },
  required: ['result'],
  additionalProperties: false,
};

const SKILL_MD = `---
name: word-count
description: Counts the words of a text file
---
# Word count

Run \`bash skills/word-count/scripts/count.sh <file>\` with the file's path in the workspace:
it prints the number of words and nothing else.
`;

const COUNT_SH = '#!/bin/sh\n# prints the number of words of the file named by $1\nwc -w < "$1" | tr -d " "\n';

interface Step {
  tool: string;
  arguments: Record<string, unknown>;
}

function spec(runId: string, receiverUrl: string, secret: string, modelUrl: string, steps: Step[], extra: Array<[string, string]> = []): SandboxSpec {
  const prompt = `Count the words of data/words.txt with the word-count skill.\n\n\`\`\`fake-model-script\n${JSON.stringify(steps)}\n\`\`\`\n`;
  return {
    runId,
    workspace: [
      { path: 'prompt.md', content: Buffer.from(prompt) },
      { path: 'input.json', content: Buffer.from('{}') },
      { path: 'data/words.txt', content: Buffer.from('alpha beta gamma delta\nepsilon zeta eta\n') },
      { path: 'skills/word-count/SKILL.md', content: Buffer.from(SKILL_MD) },
      { path: 'skills/word-count/scripts/count.sh', content: Buffer.from(COUNT_SH) },
      ...extra.map(([path, content]) => ({ path, content: Buffer.from(content) })),
    ],
    sidecar: {
      runId,
      eventsUrl: `${receiverUrl}/internal/runs/${runId}/events`,
      eventSecret: secret,
      model: { baseUrl: modelUrl, apiKey: 'sk-workspace-tools-test-key-0123456789', model: 'fake-script' },
      egressAllowInternalHosts: [new URL(modelUrl).host],
      outputSchema: resultSchema,
      runtimeTools: ['output'],
      heartbeatSeconds: 60,
    },
    limits: { memoryMb: 1536, cpus: 2 },
  };
}

const OUTPUT_ALL: Step = { tool: 'output', arguments: { result: '{{results}}' } };

describe('workspace tools in a process sandbox', () => {
  let model: FakeModel;
  let receiver: EventReceiver;
  let workDir: string;
  const secret = newRunEventSecret();
  const adapters: ProcessSandboxAdapter[] = [];

  before(async () => {
    model = await startFakeModel();
    receiver = await startEventReceiver(secret);
    workDir = await mkdtemp(join(tmpdir(), 'sbx-ws-tools-'));
  });
  after(async () => {
    await Promise.all(adapters.map((a) => a.close()));
    await receiver.close();
    await model.close();
    await rm(workDir, { recursive: true, force: true });
  });

  async function adapterFor(name: string, opts: { confine: 'auto' | 'off'; unsafe?: boolean }): Promise<ProcessSandboxAdapter> {
    const adapter = await createProcessAdapter({ warmPool: 0, workDir: join(workDir, name), confine: opts.confine, unconfinedShellUnsafe: opts.unsafe });
    adapters.push(adapter);
    return adapter;
  }

  /** Runs the steps to the end; the run's output (the tool results as a JSON array when OUTPUT_ALL ends them) and the model's requests. */
  async function run(adapter: ProcessSandboxAdapter, runId: string, steps: Step[], extra?: Array<[string, string]>) {
    const seenBefore = model.requests.length;
    const { sandboxId } = await adapter.start(spec(runId, receiver.url, secret, model.url, steps, extra));
    const mine = () => receiver.deliveries.filter((d) => d.path.includes(`/${runId}/`)).flatMap((d) => d.events ?? []);
    await waitUntil(() => mine().some((e) => e.type === 'completed' || e.type === 'failed'), 60_000);
    const events = mine();
    const output = events.find((e) => e.type === 'output') as { data: { output: { result: string } } } | undefined;
    await adapter.stop(sandboxId);
    const requests = model.requests.slice(seenBefore);
    const toolNames = (requests[0]?.body?.tools ?? []).map((t: any) => t.function.name as string);
    const system = String(requests[0]?.body?.messages?.find((m: any) => m.role === 'system')?.content ?? '');
    return { events, output: output?.data.output.result, toolNames, system };
  }

  test(bwrap ? 'a skill script runs under bubblewrap and its result is the run output' : 'without bwrap: skipped confined run', { skip: !bwrap }, async () => {
    const adapter = await adapterFor('skill', { confine: 'auto' });
    assert.equal(adapter.isolation.confinement, 'bubblewrap');
    assert.equal(adapter.isolation.shell, 'bubblewrap', JSON.stringify(adapter.isolation));
    const r = await run(adapter, 'run_ws_skill', [
      { tool: 'workspace_read', arguments: { path: 'skills/word-count/SKILL.md' } },
      { tool: 'workspace_bash', arguments: { command: 'bash skills/word-count/scripts/count.sh data/words.txt' } },
      { tool: 'output', arguments: { result: '{{result:1}}' } },
    ]);
    assert.equal(r.events.at(-1)?.type, 'completed', JSON.stringify(r.events));
    assert.equal(r.output, 'exit code 0\n7');
    // the system prompt lists the skill's name, description and folder
    assert.match(r.system, /- word-count: Counts the words of a text file \(location: skills\/word-count\/, instructions in skills\/word-count\/SKILL\.md\)/);
    for (const name of ['workspace_list', 'workspace_read', 'workspace_write', 'workspace_edit', 'workspace_search', 'workspace_bash', 'output']) {
      assert.ok(r.toolNames.includes(name), `${name} offered: ${r.toolNames.join(', ')}`);
    }
  });

  test(
    bwrap ? 'under bubblewrap: host files, .. paths, links out and the network are out of reach' : 'without bwrap: skipped',
    { skip: !bwrap },
    async () => {
      const listener: Server = createServer();
      let connections = 0;
      listener.on('connection', (s) => {
        connections++;
        s.destroy();
      });
      await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
      const port = (listener.address() as AddressInfo).port;
      try {
        const adapter = await adapterFor('escape', { confine: 'auto' });
        const r = await run(adapter, 'run_ws_escape', [
          { tool: 'workspace_read', arguments: { path: '/etc/passwd' } },
          { tool: 'workspace_read', arguments: { path: '../ipc/sidecar.sock' } },
          {
            tool: 'workspace_bash',
            arguments: {
              command:
                `ln -s ${REPO}/dist dist-link; ln -s / root-link; ` +
                'cat /etc/passwd; echo "passwd=$?"; ls /run/sidecar; echo "sidecar=$?"; ' +
                `ls ${REPO}; echo "project=$?"; ls /; `,
            },
          },
          { tool: 'workspace_read', arguments: { path: 'dist-link/agent-runtime.cjs' } },
          { tool: 'workspace_list', arguments: { path: 'root-link/run/sidecar' } },
          { tool: 'workspace_write', arguments: { path: 'dist-link/planted.txt', content: 'x' } },
          {
            tool: 'workspace_bash',
            arguments: {
              command:
                `echo probe > /dev/tcp/127.0.0.1/${port}; echo "tcp=$?"; ` +
                `curl -sS -m 5 http://127.0.0.1:${port}/ >/dev/null 2>&1; echo "curl=$?"; ` +
                'curl -sS -m 5 --unix-socket /run/sidecar/sidecar.sock http://sidecar/v1/models >/dev/null 2>&1; echo "socket=$?"',
            },
          },
          OUTPUT_ALL,
        ]);
        assert.equal(r.events.at(-1)?.type, 'completed', JSON.stringify(r.events));
        const results = JSON.parse(r.output!) as string[];
        assert.equal(results.length, 7, r.output);
        assert.match(results[0], /refused: absolute paths are outside the workspace/);
        assert.match(results[1], /refused: '\.\.' leaves the workspace/);
        // the shell sees no /etc, no sidecar socket and no project: only the workspace and /usr
        assert.match(results[2], /^exit code 0\n/);
        assert.match(results[2], /passwd=1/);
        assert.match(results[2], /sidecar=2/);
        assert.match(results[2], /project=2/);
        const rootEntries = results[2].split('\n').slice(-12).filter((l) => /^[a-z0-9]+$/.test(l));
        assert.ok(!rootEntries.includes('etc') && !rootEntries.includes('run') && rootEntries.includes('workspace'), results[2]);
        // the links the shell made point at what the agent's own view holds: refused all the same
        assert.match(results[3], /refused: it leads outside the workspace/);
        assert.match(results[4], /refused: it leads outside the workspace/);
        assert.match(results[5], /refused: a symbolic link is on the way/);
        assert.match(results[6], /tcp=1/);
        assert.match(results[6], /curl=7/);
        assert.match(results[6], /socket=7/);

        // positive sentinel: the listener counts a connection that can reach it, then nothing else came
        const { connect } = await import('node:net');
        await new Promise<void>((resolve, reject) => connect(port, '127.0.0.1').once('connect', function (this: any) {
          this.destroy();
          resolve();
        }).once('error', reject));
        await waitUntil(() => connections >= 1);
        assert.equal(connections, 1, 'only the sentinel reached the listener');
      } finally {
        listener.close();
      }
    },
  );

  test('an unconfined sandbox offers no shell without the unsafe setting', async () => {
    const adapter = await adapterFor('off', { confine: 'off' });
    assert.equal(adapter.isolation.shell, 'none');
    assert.match(adapter.isolation.shellNote ?? '', /SANDBOX_UNCONFINED_SHELL_UNSAFE/);
    const r = await run(adapter, 'run_ws_noshell', [{ tool: 'workspace_bash', arguments: { command: 'id' } }]);
    assert.ok(r.toolNames.includes('workspace_read'), r.toolNames.join(', '));
    assert.ok(!r.toolNames.includes('workspace_bash'), r.toolNames.join(', '));
    assert.match(r.system, /No shell is available in this run/);
    assert.equal(r.events.at(-1)?.type, 'completed');
  });

  test('an unconfined sandbox with SANDBOX_UNCONFINED_SHELL_UNSAFE offers the shell; the path guard still holds', async () => {
    const adapter = await adapterFor('unsafe', { confine: 'off', unsafe: true });
    assert.equal(adapter.isolation.shell, 'unconfined');
    const r = await run(adapter, 'run_ws_unsafe', [
      { tool: 'workspace_bash', arguments: { command: 'ln -s /etc/passwd host-passwd && bash skills/word-count/scripts/count.sh data/words.txt' } },
      { tool: 'workspace_read', arguments: { path: 'host-passwd' } },
      { tool: 'workspace_search', arguments: { glob: '**/*.sh', text: 'wc -w' } },
      { tool: 'workspace_bash', arguments: { command: 'sleep 300 >/dev/null 2>&1 & echo "$!"' } },
      OUTPUT_ALL,
    ]);
    assert.ok(r.toolNames.includes('workspace_bash'));
    const results = JSON.parse(r.output!) as string[];
    assert.equal(results[0], 'exit code 0\n7');
    assert.match(results[1], /refused: it leads outside the workspace/);
    assert.equal(results[2], 'skills/word-count/scripts/count.sh:3: wc -w < "$1" | tr -d " "');
    // what a command left in the background ends with the sandbox (run() stopped it)
    const background = Number(/^exit code 0\n(\d+)$/.exec(results[3])?.[1]);
    assert.ok(background > 0, results[3]);
    await waitUntil(() => !running(background));
  });
});
