// A local integration (source.kind local) through the platform on RUN_ADAPTER=docker: the launch
// accepts it, the boot resolves its mcp-server package and starts the server beside the sidecar,
// the run's scripted model calls the tool and the run succeeds with its answer; the reaper removes
// the server with the sandbox once the run has ended. An integration naming an image the operator
// does not allow is refused at launch with the problem document. (The process backend's refusal:
// integrations-connections.test.ts.)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxAdapter } from '../../activities/sandbox/adapter.ts';
import { createDockerAdapter, LABEL_ROLE, LABEL_RUN, type DockerSandboxAdapter } from '../../activities/sandbox/docker-adapter.ts';
import { reapEndedSandboxes } from '../../activities/sandbox/reaper.ts';
import { runActivitiesFor } from '../../bin/sandbox.ts';
import { errorCatalog } from '../../lib/error-catalog.ts';
import { freePort } from '../../lib/free-port.ts';
import { allowedLocalImages } from '../../lib/local-integration-images.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { AGENT_IMAGE, DOCKER_REQUIRED, dockerForTests, SIDECAR_IMAGE } from '../support/docker.ts';
import { client } from '../support/http.ts';
import { aDefaultModel, importPackage, waitForStatus } from '../support/runs.ts';
import { archive } from './integrations-harness.ts';

const unavailable = await dockerForTests();
const SERVER = readFileSync(new URL('../fixtures/local-mcp-server/server.cjs', import.meta.url), 'utf8');

const outputSchema = {
  type: 'object',
  properties: { echo: { type: 'string' }, environment: { type: 'string' } },
  required: ['echo', 'environment'],
  additionalProperties: false,
};

/** An agent whose scripted model makes these tool calls, selecting `tools` of `integration`. */
function anAgentArchive(name: string, integration: string, tools: string[], script: unknown[]): Buffer {
  return archive({
    name, version: '1.0.0', type: 'agent', schema_version: '0.3',
    dependencies: { integrations: { [integration]: '^1.0.0' } },
    integrations_configuration: { [integration]: { tools } },
    runtime_tools: ['output'],
    output: { schema: outputSchema },
  }, { 'prompt.md': `Use the local tools.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n` });
}

describe('a local integration through the platform on the docker backend', { skip: unavailable ?? false }, () => {
  let fake: FakeModel;
  let app: TestApp;
  let adapter: DockerSandboxAdapter;
  let workDir: string;
  let key: string;
  let org: Awaited<ReturnType<typeof anOrg>>;
  let api: ReturnType<typeof client>;

  before(async () => {
    fake = await startFakeModel();
    const port = await freePort();
    app = await startTestApp({
      port,
      env: { RUN_ADAPTER: 'docker', INTERNAL_API_URL: `http://127.0.0.1:${port}`, EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host },
    });
    const pool = app.deps.database.pool;
    org = await anOrg(pool);
    key = (await aKey(pool, { ...org, userId: org.ownerId })).key;
    await aDefaultModel(app.url, key, fake.url, 'fake-script');
    api = client(app.url, { key });
    workDir = await mkdtemp(join(tmpdir(), 'local-integration-run-'));
    adapter = await createDockerAdapter({
      workDir, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE, localIntegrationImages: allowedLocalImages(app.deps.config),
    });
  });
  /** the sandboxes this file started: the engine may hold others' (another worker's), which are not this test's to stop */
  const started: string[] = [];
  after(async () => {
    for (const id of started) await adapter.stop(id);
    await adapter?.close();
    await app?.close();
    await fake?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  /** Imports with a key of its own each time: imports are rate-limited per caller. */
  const imported = async (pkg: Buffer) => {
    const own = (await aKey(app.deps.database.pool, { ...org, userId: org.ownerId })).key;
    return importPackage(app.url, own, pkg);
  };

  test('a run whose model calls the local tool gets its answer and succeeds; the reaper removes the server with the sandbox', async () => {
    await imported(archive({
      name: '@acme/echo-server', version: '1.0.0', type: 'mcp-server', schema_version: '0.3',
      server: { command: ['node', 'server.cjs'], env: { GREETING: 'hello from the package' } },
    }, { 'server.cjs': SERVER }));
    await imported(archive({
      name: '@acme/local-echo', version: '1.0.0', type: 'integration', schema_version: '0.3',
      source: { kind: 'local', server: { name: '@acme/echo-server', version: '^1.0.0' }, env: { GREETING: 'hello from the integration' } },
      default_tools: ['echo'],
    }));
    await imported(anAgentArchive('@acme/local-agent', '@acme/local-echo', ['echo', 'environment'], [
      { tool: 'acme_local-echo__echo', arguments: { text: 'ping' } },
      { tool: 'acme_local-echo__environment', arguments: {} },
      { tool: 'output', arguments: { echo: '{{result:0}}', environment: '{{result:1}}' } },
    ]));

    const launch = await api.post('/api/agents/@acme/local-agent/run', { input: {} });
    assert.equal(launch.status, 201, launch.text);
    const runId = launch.body.id as string;
    const activities = runActivitiesFor(app.deps, adapter);
    const { sandboxId } = await activities.boot(runId);
    started.push(sandboxId);
    const servers = await adapter.docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${runId}`, `${LABEL_ROLE}=mcp`] } });
    assert.equal(servers.length, 1, 'the local server has a container of its own');

    const run = await waitForStatus(api, runId, (status) => !['pending', 'running'].includes(status), 60_000);
    assert.equal(run.status, 'success', JSON.stringify(run.error));
    assert.equal(run.result.output.echo, 'hello from the integration: ping', 'the tool answered, with the integration env over the package env');
    const seen = JSON.parse(run.result.output.environment);
    assert.deepEqual(Object.keys(seen.env).sort(), ['GREETING', 'HOME', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'PATH', 'http_proxy', 'https_proxy', 'no_proxy'],
      'no platform secret reaches the server: the manifests\' env and the proxy variables naming the sidecar\'s egress proxy');
    assert.match(seen.env.HTTP_PROXY, /^http:\/\/mcp:[A-Za-z0-9_-]{43}@sidecar:3128$/);
    assert.equal(seen.cwd, '/server');

    // the reaper's pass over this run's sandbox
    const ours = { sandboxes: () => adapter.sandboxes().filter((s) => s.sandboxId === sandboxId), stop: adapter.stop };
    assert.deepEqual(await reapEndedSandboxes(app.deps.database.pool, ours), [sandboxId]);
    const filters = { label: [`${LABEL_RUN}=${runId}`] };
    assert.deepEqual(await adapter.docker.listContainers({ all: true, filters }), [], 'the server went with the sandbox');
    assert.deepEqual(await adapter.docker.listNetworks({ filters }), []);
  });

  test("delivery.env: the launch is refused (403 local_credential_env_disabled) until an admin allows it; then the server holds the credential in its variable, and the run's events never carry it", async () => {
    const API_KEY = 'vk_live_9f8e7d6c5b4a39281706';
    await imported(archive({
      name: '@acme/keyed-server', version: '1.0.0', type: 'mcp-server', schema_version: '0.3', server: { command: ['node', 'server.cjs'], env: {} },
    }, { 'server.cjs': SERVER }));
    await imported(archive({
      name: '@acme/local-keyed', version: '1.0.0', type: 'integration', schema_version: '0.3',
      source: { kind: 'local', server: { name: '@acme/keyed-server', version: '^1.0.0' } },
      default_tools: ['env_digest'],
      auths: {
        key: {
          type: 'api_key',
          credentials: { schema: { type: 'object', properties: { api_key: { type: 'string', minLength: 4 } }, required: ['api_key'] } },
          authorized_uris: ['https://api.vendor.test/*'],
          delivery: { env: { name: 'VENDOR_API_KEY', value: '{$credential.api_key}' } },
        },
      },
    }));
    await imported(anAgentArchive('@acme/keyed-agent', '@acme/local-keyed', ['env_digest'], [
      { tool: 'acme_local-keyed__env_digest', arguments: { name: 'VENDOR_API_KEY' } },
      { tool: 'acme_local-keyed__env_digest', arguments: { name: 'NOT_SET_HERE' } },
      { tool: 'output', arguments: { echo: '{{result:0}}', environment: '{{result:1}}' } },
    ]));
    const connected = await api.post('/api/integrations/@acme/local-keyed/auths/key/connect/fields', { credentials: { api_key: API_KEY } });
    assert.equal(connected.status, 201, connected.text);

    const refused = await api.post('/api/agents/@acme/keyed-agent/run', { input: {} });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.code, 'local_credential_env_disabled');
    assert.equal(refused.body.title, errorCatalog.local_credential_env_disabled.title);
    assert.equal(refused.body.errors[0].packageId, '@acme/local-keyed');

    // the organization's setting, by its owner (org:write)
    const admin = client(app.url, { key: (await aKey(app.deps.database.pool, { ...org, userId: org.ownerId, scopes: ['org:read', 'org:write'] })).key });
    const org0 = await admin.get(`/api/orgs/${org.orgId}`);
    assert.equal(org0.status, 200, org0.text);
    assert.equal(org0.body.local_credential_env, false, 'off by default');
    const allowed = await admin.patch(`/api/orgs/${org.orgId}`, { local_credential_env: true });
    assert.equal(allowed.status, 200, allowed.text);
    assert.equal(allowed.body.local_credential_env, true);
    try {
      const launch = await api.post('/api/agents/@acme/keyed-agent/run', { input: {} });
      assert.equal(launch.status, 201, launch.text);
      const runId = launch.body.id as string;
      const { sandboxId } = await runActivitiesFor(app.deps, adapter).boot(runId);
      started.push(sandboxId);
      const run = await waitForStatus(api, runId, (status) => !['pending', 'running'].includes(status), 60_000);
      assert.equal(run.status, 'success', JSON.stringify(run.error));
      assert.equal(run.result.output.echo, createHash('sha256').update(API_KEY).digest('hex'), 'the server holds the credential in VENDOR_API_KEY');
      assert.equal(run.result.output.environment, 'unset');
      const events = await api.get(`/api/runs/${runId}/logs`);
      assert.equal(events.status, 200, events.text);
      assert.ok(!JSON.stringify(events.body).includes(API_KEY) && !JSON.stringify(run).includes(API_KEY), "the credential is in none of the run's logs, nor its record");
    } finally {
      await admin.patch(`/api/orgs/${org.orgId}`, { local_credential_env: false });
    }
  });

  test('an integration naming an image the operator does not allow is refused at launch with the problem document; the agent image is allowed, and refused at boot by a process-backend worker', async () => {
    await imported(archive({
      name: '@acme/boxed', version: '1.0.0', type: 'integration', schema_version: '0.3',
      source: { kind: 'local', command: ['node', 'server.cjs'], image: 'registry.example/tenant/mcp:latest' },
      default_tools: ['echo'],
    }));
    await imported(anAgentArchive('@acme/boxed-agent', '@acme/boxed', ['echo'], []));
    const refused = await api.post('/api/agents/@acme/boxed-agent/run', { input: {} });
    assert.equal(refused.status, 409);
    assert.match(refused.headers.get('content-type') ?? '', /application\/problem\+json/);
    assert.equal(refused.body.code, 'local_integration_unavailable');
    assert.equal(refused.body.status, 409);
    assert.equal(refused.body.title, errorCatalog.local_integration_unavailable.title);
    assert.match(refused.body.type, /\/local-integration-unavailable$/);
    assert.match(refused.body.detail, /@acme\/boxed runs its local MCP server in the image registry\.example\/tenant\/mcp:latest/);
    assert.match(refused.body.detail, /LOCAL_INTEGRATION_IMAGES/);
    assert.deepEqual(refused.body.errors.map((e: any) => [e.field, e.code, e.packageId]), [['dependencies.integrations.@acme/boxed', 'invalid_value', '@acme/boxed']]);
    const { rows } = await app.deps.database.pool.query(`SELECT count(*)::int AS n FROM runs WHERE agent_id = '@acme/boxed-agent'`);
    assert.equal(rows[0].n, 0, 'no run was created');

    await imported(archive({
      name: '@acme/in-agent-image', version: '1.0.0', type: 'integration', schema_version: '0.3',
      source: { kind: 'local', command: ['node', '--version'], image: AGENT_IMAGE },
      default_tools: ['echo'],
    }));
    await imported(anAgentArchive('@acme/in-agent-image-agent', '@acme/in-agent-image', ['echo'], []));
    const accepted = await api.post('/api/agents/@acme/in-agent-image-agent/run', { input: {} });
    assert.equal(accepted.status, 201, accepted.text);

    // a worker on the process backend (the setting changed since the launch) refuses it at boot, starting nothing
    const processAdapter = { ...adapter, kind: 'process', start: async () => assert.fail('nothing is started') } as unknown as SandboxAdapter;
    await assert.rejects(runActivitiesFor(app.deps, processAdapter).boot(accepted.body.id), (err: { code?: string; message?: string }) =>
      err.code === 'local_integration_unavailable' && /@acme\/in-agent-image/.test(err.message ?? ''));
  });
});

test('the local integration run through the platform is tested here when CI requires it', () => {
  if (DOCKER_REQUIRED) assert.equal(unavailable, null);
  else if (unavailable) assert.match(unavailable, /docker/);
});
