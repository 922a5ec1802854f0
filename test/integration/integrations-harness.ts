// A world for the integration tests: the in-process API whose egress guard allows the loopback
// upstreams the test names (and the scripted model), an organization with its owner's key, and
// builders for integration and agent packages.
import type { SandboxAdapter, SandboxSpec } from '../../activities/sandbox/adapter.ts';
import { createRunActivities } from '../../activities/run-activities.ts';
import { runActivitiesFor, runMaterialsFor } from '../../bin/sandbox.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { writeZip } from '../../lib/zip/write-zip.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg, type BuiltOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aDefaultModel, importPackage } from '../support/runs.ts';

export interface IntegrationWorld {
  app: TestApp;
  fake: FakeModel;
  org: BuiltOrg;
  key: string;
  api: ReturnType<typeof client>;
  /** a link the API printed (connect page, callback), on this app's address */
  onApp(link: string): string;
  /** the spec the boot of `runId` builds, captured by an adapter that starts nothing */
  bootAssignment(runId: string): Promise<SandboxSpec>;
  /** a connection's credentials as stored, decrypted */
  storedCredentials(connectionId: string): Promise<Record<string, string>>;
  /** the run's event secret, decrypted */
  runSecret(runId: string): Promise<string>;
  close(): Promise<void>;
}

/** `allow`: host:port entries of loopback upstreams the integrations may reach; `model`: the scripted model's name. */
export async function anIntegrationWorld(allow: string[], env: Record<string, string> = {}, model?: string): Promise<IntegrationWorld> {
  const fake = await startFakeModel();
  const app = await startTestApp({ env: { EGRESS_ALLOW_INTERNAL_HOSTS: [...allow, new URL(fake.url).host].join(','), ...env } });
  const org = await anOrg(app.deps.database.pool);
  const { key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId });
  await aDefaultModel(app.url, key, fake.url, model);
  const { pool } = app.deps.database;
  return {
    app, fake, org, key, api: client(app.url, { key }),
    onApp(link) {
      const url = new URL(link);
      return `${app.url}${url.pathname}${url.search}`;
    },
    async bootAssignment(runId) {
      const started: SandboxSpec[] = [];
      const capture = {
        kind: 'process',
        start: async (spec: SandboxSpec) => { started.push(spec); return { sandboxId: 'sbx_capture' }; },
        alive: async () => true, state: async () => 'running', sandboxes: () => [], stop: async () => undefined, close: async () => undefined,
      } as unknown as SandboxAdapter;
      await runActivitiesFor(app.deps, capture).boot(runId);
      return started[0];
    },
    async storedCredentials(connectionId) {
      const { rows } = await pool.query('SELECT credentials FROM integration_connections WHERE id = $1', [connectionId]);
      return JSON.parse(app.deps.secrets.open(rows[0].credentials));
    },
    async runSecret(runId) {
      const { rows } = await pool.query('SELECT event_secret FROM runs WHERE id = $1', [runId]);
      return app.deps.secrets.open(rows[0].event_secret);
    },
    async close() {
      await app.close();
      await fake.close();
    },
  };
}

export function archive(manifest: Record<string, unknown>, files: Record<string, string> = {}): Buffer {
  const entries = new Map<string, Buffer>([['manifest.json', Buffer.from(JSON.stringify(manifest))]]);
  for (const [p, c] of Object.entries(files)) entries.set(p, Buffer.from(c));
  return writeZip(entries);
}

/** Imports with a key of its own: imports are rate-limited per caller. */
async function importKey(world: IntegrationWorld): Promise<string> {
  return (await aKey(world.app.deps.database.pool, { ...world.org, userId: world.org.ownerId })).key;
}

export async function anIntegration(world: IntegrationWorld, name: string, members: Record<string, unknown>, version = '1.0.0'): Promise<string> {
  await importPackage(world.app.url, await importKey(world), archive({ name, version, type: 'integration', schema_version: '0.3', ...members }));
  return name;
}

/** An agent using `integrations` (id → tools) at any version. */
export async function anAgent(world: IntegrationWorld, name: string, integrations: Record<string, string[]>): Promise<string> {
  await importPackage(world.app.url, await importKey(world), archive({
    name, version: '1.0.0', type: 'agent', schema_version: '0.3',
    dependencies: { integrations: Object.fromEntries(Object.keys(integrations).map((id) => [id, '*'])) },
    integrations_configuration: Object.fromEntries(Object.entries(integrations).map(([id, tools]) => [id, { tools }])),
  }, { 'prompt.md': 'Use the integration.' }));
  return name;
}

/** An api_key integration delivering X-Api-Key to `base` (a loopback upstream's URL). */
export function apiKeyAuth(base: string): Record<string, unknown> {
  return {
    source: { kind: 'none' },
    default_tools: ['api_call'],
    auths: {
      key: {
        type: 'api_key',
        credentials: { schema: { type: 'object', properties: { api_key: { type: 'string', minLength: 4 } }, required: ['api_key'] } },
        authorized_uris: [`${base}/*`],
        delivery: { http: { in: 'header', name: 'X-Api-Key', value: '{$credential.api_key}' } },
      },
    },
  };
}

/** Boots the run in a real sandbox of `adapter` (sidecar and agent processes) and waits for its ending. */
export async function executeInSandbox(world: IntegrationWorld, adapter: SandboxAdapter, runId: string): Promise<any> {
  const { app } = world;
  const activities = createRunActivities({
    pool: app.deps.database.pool, db: app.deps.database.db, secrets: app.deps.secrets, log: app.deps.log,
    adapter, materials: runMaterialsFor(app.deps), eventsBaseUrl: app.url, bootSeconds: 60, heartbeatSeconds: 10,
    egressAllowInternalHosts: app.deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, egressPlatformEndpoints: app.deps.platformEndpoints ?? [],
    limits: { memoryMb: 512, cpus: 1 },
  });
  const sandbox = await activities.boot(runId);
  try {
    let run = (await world.api.get(`/api/runs/${runId}?wait=true`)).body;
    while (run.status === 'pending' || run.status === 'running') run = (await world.api.get(`/api/runs/${runId}?wait=true`)).body;
    return run;
  } finally {
    await activities.teardown(runId, sandbox.sandboxId);
  }
}
