// publish_file in a real sidecar process makes a durable file of its run: the sidecar posts the
// file to the platform's signed runner route (it has no database access), the run lists it, and a
// refusal (RUN_MAX_FILES) reaches the agent as a tool error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { useTestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aSidecarAssignment, bearer, sidecarUrlOf, spawnWarm, startEventReceiver } from './sidecar-run-harness.ts';

const dataDir = await mkdtemp(join(tmpdir(), 'files-publish-'));
const { app, pool } = useTestApp({ env: { DATA_DIR: dataDir, RUN_MAX_FILES: '1' } });

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as Array<{ type: string; text: string }>).map((c) => c.text).join('');
}

test('publish_file in the sidecar becomes a durable file listed on its run; RUN_MAX_FILES refuses the next', async (t) => {
  const org = await anOrg(pool());
  const api = client(app().url, { key: (await aKey(pool(), { ...org, userId: org.ownerId })).key });
  const secret = newRunEventSecret();
  const runId = `run_pub${org.orgId.slice(0, 8)}`;
  await pool().query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at)
     VALUES ($1, $2, $3, '@acme/bot', '1.0.0', 'running', 'member', $4, 60, $5, now() + interval '1 hour')`,
    [runId, org.orgId, org.spaceId, org.ownerId, app().deps.secrets.seal(secret)],
  );
  const receiver = await startEventReceiver(secret);
  const filesDir = await mkdtemp(join(tmpdir(), 'run-files-'));
  const sidecar = await spawnWarm('sidecar/main.ts');
  const assignment = {
    ...aSidecarAssignment({ runId, eventsUrl: `${receiver.url}/events`, eventSecret: secret, model: null, runtimeTools: ['publish_file'], filesDir }),
    publishUrl: `${app().url}/internal/runs/${runId}/files`,
  };
  sidecar.assign(assignment);
  const mcp = new Client({ name: 'test', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${sidecarUrlOf(sidecar)}/mcp`), { requestInit: { headers: bearer(assignment.token) } }));
  t.after(async () => {
    await mcp.close();
    await sidecar.kill();
    await receiver.close();
    await rm(filesDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  const published = await mcp.callTool({ name: 'publish_file', arguments: { name: 'report.md', content: '# Report' } });
  assert.equal(published.isError, false, textOf(published));
  const fileId = /as (file_\w+)/.exec(textOf(published))?.[1];
  assert.ok(fileId, textOf(published));

  const listed = await api.get(`/api/runs/${runId}/files`);
  assert.deepEqual(listed.body.data.map((f: { id: string; role: string; workspace_name: string; mime_type: string }) => [f.id, f.role, f.workspace_name, f.mime_type]), [[fileId, 'output', 'report.md', 'text/markdown']]);
  assert.equal((await api.get(`/api/files/${fileId}/content`)).text, '# Report');

  const refused = await mcp.callTool({ name: 'publish_file', arguments: { name: 'more.md', content: 'more' } });
  assert.equal(refused.isError, true);
  assert.match(textOf(refused), /file_count_exceeded/);
});
