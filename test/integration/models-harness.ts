// Shared arrangements of the model provider tests: a platform that may reach the scripted model
// server (the provider) and a few spare 127.0.0.1 ports, each named host:port, an organization whose owner acts through keys (each a
// fresh rate-limit bucket), and a stand-in provider that answers chosen statuses.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { namedPort } from '../support/platform-process.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp, type TestAppOptions } from '../support/app.ts';
import { aKey, anOrg, type BuiltOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';

export const PROVIDER_KEY = 'sk-test-0123456789abcdefWXYZ';

export type Api = ReturnType<typeof client>;

export interface ModelWorld {
  app: TestApp;
  model: FakeModel;
  org: BuiltOrg;
  api: Api;
  /** another client of the owner: a fresh rate-limit bucket */
  freshApi(scopes?: string[]): Promise<Api>;
  /** a 127.0.0.1 port EGRESS_ALLOW_INTERNAL_HOSTS names, not yet used by this world */
  sparePort(): number;
  close(): Promise<void>;
}

export async function aModelWorld(opts: TestAppOptions = {}): Promise<ModelWorld> {
  const model = await startFakeModel();
  const spare = [await namedPort(), await namedPort(), await namedPort()];
  const allowed = [new URL(model.url).host, ...spare.map((port) => `127.0.0.1:${port}`)].join(',');
  const app = await startTestApp({ ...opts, env: { EGRESS_ALLOW_INTERNAL_HOSTS: allowed, ...(opts.env ?? {}) } });
  const pool = app.deps.database.pool;
  const org = await anOrg(pool);
  const freshApi = async (scopes?: string[]) => client(app.url, { key: (await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, scopes })).key });
  return {
    app, model, org, freshApi,
    api: await freshApi(),
    sparePort() {
      const port = spare.shift();
      if (port === undefined) throw new Error('this model world has no spare port left');
      return port;
    },
    async close() {
      await model.close();
      await app.close();
    },
  };
}

/** A credential for the scripted model server, as the owner creates it. */
export async function aCredential(w: ModelWorld, body: Record<string, unknown> = {}): Promise<any> {
  const res = await w.api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'Local', base_url: w.model.url, api_key: PROVIDER_KEY, ...body });
  if (res.status !== 201) throw new Error(`credential not created: ${res.status} ${res.text}`);
  return res.body;
}

export async function aModel(w: ModelWorld, credentialId: string, body: Record<string, unknown> = {}): Promise<any> {
  const res = await w.api.post('/api/models', { credential_id: credentialId, model: 'fake', name: 'Fake', ...body });
  if (res.status !== 201) throw new Error(`model not created: ${res.status} ${res.text}`);
  return res.body;
}

/** A provider on one of the world's spare ports that answers every request with the given status and JSON body; base URL ends in /v1. */
export async function aScriptedProvider(w: ModelWorld, status: number, body: unknown): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((r) => server.listen(w.sparePort(), '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

/** A 127.0.0.1 port the world may reach and nothing listens on. */
export function aClosedPort(w: ModelWorld): number {
  return w.sparePort();
}
