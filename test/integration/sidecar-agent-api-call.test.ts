// A whole run (agent runtime and sidecar as real processes, the scripted model) whose agent calls
// its integration's api_call against a loopback upstream: the upstream sees the injected
// credential; the agent's environment, arguments, workspace, every model request and every event
// are searched for the credential and hold none of it.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { aSidecarAssignment, aSidecarToken, aWorkspace, minimalEnv, REAL_MODEL_KEY, sidecarUrlOf, spawnWarm, startEventReceiver } from './sidecar-run-harness.ts';

const CREDENTIAL = 'sk-connection-credential-94c1e0b7';

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else out.push(await readFile(path, 'utf8'));
  }
  return out;
}

describe('an agent calling api_call', () => {
  let model: FakeModel;
  before(async () => {
    model = await startFakeModel();
  });
  after(() => model.close());

  test('the upstream sees the injected header; the agent never holds the credential', async (t) => {
    const seen: IncomingHttpHeaders[] = [];
    const upstream = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      // an upstream that echoes the header back: the model must still not read it
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: 3, echoed: req.headers.authorization }));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret);
    const ws = await aWorkspace({ prompt: 'Count the items of the CRM.', input: { api_call_url: `${upstreamUrl}/api/items` } });
    const [sidecar, agent] = await Promise.all([spawnWarm('sidecar/main.ts'), spawnWarm('agent-runtime/main.ts', minimalEnv())]);
    t.after(async () => {
      await Promise.all([agent.kill(), sidecar.kill()]);
      await receiver.close();
      await ws.remove();
      upstream.closeAllConnections();
      await new Promise<void>((resolve) => upstream.close(() => resolve()));
    });
    const environ = readFileSync(`/proc/${agent.proc.pid}/environ`, 'utf8');
    const cmdline = readFileSync(`/proc/${agent.proc.pid}/cmdline`, 'utf8');
    const firstRequest = model.requests.length;
    const token = aSidecarToken();
    sidecar.assign({
      ...aSidecarAssignment({
        token,
        eventsUrl: `${receiver.url}/events`,
        eventSecret: secret,
        model: { baseUrl: model.url, apiKey: REAL_MODEL_KEY, model: 'fake' },
        runtimeTools: ['log'],
      }),
      egressAllowInternalHosts: [new URL(model.url).host, new URL(upstreamUrl).host],
      integrations: [{
        packageId: '@acme/crm',
        toolPrefix: 'acme_crm',
        tools: ['api_call'],
        source: { kind: 'none' },
        authKey: 'default',
        connectionId: 'c0ffee00-0000-4000-8000-000000000001',
        authorizedUris: [`${upstreamUrl}/api/*`],
        delivery: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.api_key}' },
        credentials: { api_key: CREDENTIAL },
      }],
    });
    agent.assign({ workspace: ws.dir, sidecarUrl: sidecarUrlOf(sidecar), sidecarToken: token });
    assert.equal(await agent.exited, 0, agent.stderr());
    await receiver.waitFor((events) => events.some((e) => e.type === 'completed'));

    assert.equal(seen.length, 1);
    assert.equal(seen[0].authorization, `Bearer ${CREDENTIAL}`);
    const requests = model.requests.slice(firstRequest);
    const offered = requests[0].body.tools.map((tool: { function: { name: string } }) => tool.function.name);
    assert.ok(offered.includes('acme_crm__api_call'), offered.join(', '));
    const toolResult = requests.flatMap((r) => r.body.messages).find((m: { role: string }) => m.role === 'tool');
    assert.match(JSON.stringify(toolResult), /\[redacted\]/, 'the tool result reached the model, scrubbed');

    const searched = {
      environment: environ,
      arguments: cmdline,
      workspace: (await filesUnder(ws.dir)).join('\n'),
      'model requests': JSON.stringify(requests.map((r) => r.body)),
      events: JSON.stringify(receiver.events),
      'agent output': agent.stderr(),
    };
    for (const [where, text] of Object.entries(searched)) assert.equal(text.includes(CREDENTIAL), false, `the credential is in the agent's ${where}`);
  });
});
