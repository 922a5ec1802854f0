// What the webhook delivery tests share: the in-process API with the webhooks module, a real
// Restate server with the module's delivery workflow registered, the module's dispatcher, and a
// receiver on loopback that verifies every delivery with the standardwebhooks library.
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { loadWebhooks } from '../../api/modules/webhooks/index.ts';
import type { Dispatcher } from '../../api/modules/webhooks/dispatcher.ts';
import { deliveriesOf } from '../../api/modules/webhooks/webhooks.ts';
import { finalizeRun, type RunEndingRecord } from '../../db/run-finalization.ts';
import { freePort } from '../../lib/free-port.ts';
import { createSecretBox } from '../../lib/crypto.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { registerDeployment } from '../../restate/admin.ts';
import { startRestateServer } from '../../restate/launcher.ts';
import { startWorkflowEndpoint } from '../../workflows/endpoint.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg, type BuiltOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { quietLogger } from '../support/run-workflow-world.ts';

export interface Received {
  id: string;
  path: string;
  body: { type: string; timestamp: string; data: Record<string, any> };
  /** the body's bytes as they arrived */
  raw: string;
  /** the secrets whose signature verified */
  verifiedWith: string[];
  /** the webhook-signature header as sent (space-separated v1,<base64> entries) */
  signature: string;
  /** the webhook-timestamp header: when the attempt was signed (Unix seconds) */
  signedAt: number;
}

export interface Receiver {
  port: number;
  url: string;
  received: Received[];
  /** secrets the receiver verifies with; a delivery no secret verifies is answered 401 */
  secrets: string[];
  /** answers by path; default 200 */
  answer: (path: string, count: number) => number | 'hang';
  /** requests answered 'hang', waiting: call to answer them 200 */
  hanging: Array<() => void>;
  listen(): Promise<void>;
  close(): Promise<void>;
  /** resolves once `predicate` holds over what was received */
  until(predicate: (r: Received[]) => boolean, ms?: number): Promise<void>;
}

export async function aReceiver(port?: number): Promise<Receiver> {
  const p = port ?? (await freePort());
  const counts = new Map<string, number>();
  let server: http.Server | null = null;
  const waiters: Array<() => void> = [];
  const r: Receiver = {
    port: p,
    url: `http://127.0.0.1:${p}`,
    received: [],
    secrets: [],
    answer: () => 200,
    hanging: [],
    async listen() {
      server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
          const verifiedWith = r.secrets.filter((s) => {
            try {
              new Webhook(s).verify(raw, headers);
              return true;
            } catch {
              return false;
            }
          });
          if (verifiedWith.length === 0) {
            res.writeHead(401).end();
            return;
          }
          const path = req.url ?? '/';
          const n = (counts.get(path) ?? 0) + 1;
          counts.set(path, n);
          const status = r.answer(path, n);
          const record = () => {
            r.received.push({ id: headers['webhook-id'], path, body: JSON.parse(raw), raw, verifiedWith, signature: headers['webhook-signature'] ?? '', signedAt: Number(headers['webhook-timestamp']) });
            for (const w of waiters.splice(0)) w();
          };
          if (status === 'hang') {
            r.hanging.push(() => {
              record();
              res.writeHead(200).end('ok');
            });
            for (const w of waiters.splice(0)) w();
            return;
          }
          if (status >= 200 && status < 300) record();
          res.writeHead(status).end(status === 410 ? 'gone' : 'ok');
        });
      });
      await new Promise<void>((resolve) => server!.listen(p, '127.0.0.1', () => resolve()));
    },
    async close() {
      if (!server) return;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
      server = null;
    },
    async until(predicate, ms = 60_000) {
      const deadline = Date.now() + ms;
      while (!predicate(r.received)) {
        if (Date.now() > deadline) throw new Error(`receiver: condition not met in ${ms} ms; received ${r.received.length}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
    },
  };
  return r;
}

export interface DeliveryWorld {
  app: TestApp;
  org: BuiltOrg;
  key: string;
  pool: pg.Pool;
  ingressUrl: string;
  adminUrl: string;
  /** starts one more dispatcher, as another API replica would */
  anotherDispatcher(): void;
  /** runs the first dispatcher's sweep now (it runs every 15 s) */
  sweep(): Promise<void>;
  /** a run of the organization's default space, launched by its owner */
  aRun(status?: 'pending' | 'running', agentId?: string): Promise<string>;
  end(runId: string, ending: RunEndingRecord): Promise<void>;
  createHook(body: Record<string, unknown>): Promise<{ id: string; secret: string }>;
  /** polls the delivery log until `predicate` holds */
  deliveriesUntil(webhookId: string, predicate: (d: any[]) => boolean, ms?: number): Promise<any[]>;
  close(): Promise<void>;
}

export interface DeliveryWorldOptions {
  /** false: no dispatcher runs until anotherDispatcher() (another process may be the one sending) */
  dispatcher?: boolean;
  /** the instance key secrets are sealed with, for another process to open them too */
  instanceKey?: Buffer;
}

export async function aDeliveryWorld(receiverPort: number, env: Record<string, string> = {}, opts: DeliveryWorldOptions = {}): Promise<DeliveryWorld> {
  const app = await startTestApp({
    env: { EGRESS_ALLOW_INTERNAL_HOSTS: `127.0.0.1:${receiverPort}`, ...env },
    ...(opts.instanceKey ? { secrets: createSecretBox(opts.instanceKey) } : {}),
  });
  const pool = app.deps.database.pool;
  const org = await anOrg(pool);
  const { key } = await aKey(pool, { ...org, userId: org.ownerId });
  const module = await loadWebhooks(app.deps);

  const baseDir = mkdtempSync(join(tmpdir(), 'restate-webhooks-'));
  const [ingressPort, adminPort, nodePort, endpointPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const server = await startRestateServer({ baseDir, ingressPort, adminPort, nodePort, logFile: join(baseDir, 'restate.log') });
  const endpoint = await startWorkflowEndpoint({ port: endpointPort, services: module.services!, logger: quietLogger });
  await registerDeployment(server.adminUrl, endpoint.url);
  const dispatchers = opts.dispatcher === false ? [] : [module.start!({ ingressUrl: server.ingressUrl }) as Dispatcher];
  let n = 0;

  return {
    app, org, key, pool, ingressUrl: server.ingressUrl, adminUrl: server.adminUrl,
    anotherDispatcher: () => void dispatchers.push(module.start!({ ingressUrl: server.ingressUrl }) as Dispatcher),
    sweep: () => dispatchers[0].sweep(),
    async aRun(status = 'running', agentId = '@acme/bot') {
      const id = `run_wh${org.orgId.slice(0, 6)}${++n}`;
      await pool.query(
        `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at, started_at)
         VALUES ($1, $2, $3, $4, '1.0.0', $5, 'member', $6, 60, $7, now() + interval '1 hour', CASE WHEN $5 = 'running' THEN now() END)`,
        [id, org.orgId, org.spaceId, agentId, status, org.ownerId, app.deps.secrets.seal(newRunEventSecret())],
      );
      return id;
    },
    async end(runId, ending) {
      await finalizeRun(pool, runId, ending);
    },
    async createHook(body) {
      // a key per webhook: creations are limited to 10 a minute per caller
      const fresh = (await aKey(pool, { ...org, userId: org.ownerId })).key;
      const res = await call(app.url, 'POST', '/api/webhooks', { key: fresh, body: { level: 'space', spaceId: org.spaceId, events: ['run.started', 'run.success', 'run.failed', 'run.timeout', 'run.cancelled'], ...body } });
      if (res.status !== 201) throw new Error(`webhook: ${res.status} ${res.text}`);
      return { id: res.body.id, secret: res.body.secret };
    },
    async deliveriesUntil(webhookId, predicate, ms = 60_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        // polled below the API (its reads are limited to 300 a minute); the tests read the wire once at the end
        const data = await deliveriesOf(pool, org.orgId, webhookId, { limit: 100 });
        if (predicate(data)) return data;
        if (Date.now() > deadline) throw new Error(`delivery log: condition not met in ${ms} ms: ${JSON.stringify(data).slice(0, 2000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async close() {
      for (const d of dispatchers) await d.stop();
      await endpoint.close();
      await server.stop();
      await app.close();
      rmSync(baseDir, { recursive: true, force: true });
    },
  };
}
