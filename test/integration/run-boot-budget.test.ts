// The boot activity hands the sidecar the run's model budget: the organization's per-run limit and
// what its month has left, counted from every run's ledger by the run_usage trigger.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRunActivities, type RunMaterials } from '../../activities/run-activities.ts';
import type { SandboxAdapter, SandboxSpec } from '../../activities/sandbox/adapter.ts';
import { writeOrgBudget } from '../../db/budgets.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { anOrg, type BuiltOrg } from '../support/builders.ts';

let app: TestApp;
let n = 0;
before(async () => {
  app = await startTestApp();
});
after(() => app.close());

async function aPendingRun(org: BuiltOrg): Promise<string> {
  const id = `run_boot_budget_${++n}`;
  await app.deps.database.pool.query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at)
     VALUES ($1, $2, $3, '@acme/agent', '1.0.0', 'pending', 'member', $4, 60, $5, now() + interval '1 hour')`,
    [id, org.orgId, org.spaceId, org.ownerId, app.deps.secrets.seal(newRunEventSecret())],
  );
  return id;
}

/** Boots the run with a recording adapter; answers the sidecar assignment it was given. */
async function bootedAssignment(runId: string): Promise<SandboxSpec['sidecar']> {
  let spec: SandboxSpec | undefined;
  const activities = createRunActivities({
    pool: app.deps.database.pool, db: app.deps.database.db, secrets: app.deps.secrets, log: app.deps.log,
    adapter: { start: async (s: SandboxSpec) => ((spec = s), { sandboxId: 'sb_test' }) } as unknown as SandboxAdapter,
    materials: {
      agent: async () => ({ manifest: { name: '@acme/agent', version: '1.0.0', type: 'agent' }, files: new Map([['prompt.md', Buffer.from('hi')]]), skills: [] }),
      model: async () => ({ model: 'fake', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-x' }),
    } as unknown as RunMaterials,
    eventsBaseUrl: app.url, bootSeconds: 60, heartbeatSeconds: 10, egressAllowInternalHosts: [], limits: { memoryMb: 512, cpus: 1 },
  });
  await activities.boot(runId);
  assert.ok(spec, 'the adapter was asked to start the sandbox');
  return spec.sidecar;
}

test('without a budget the sidecar gets no limits', async () => {
  const org = await anOrg(app.deps.database.pool);
  assert.deepEqual((await bootedAssignment(await aPendingRun(org))).budget, { run: null, org: null });
});

test("the per-run limit, and what the month has left after every run's recorded usage", async () => {
  const pool = app.deps.database.pool;
  const org = await anOrg(pool);
  const other = await anOrg(pool);
  await writeOrgBudget(pool, org.orgId, { run_max_tokens: 1000, run_max_cost_usd: null, monthly_max_tokens: 500, monthly_max_cost_usd: 3 });
  // earlier runs' usage, as the sidecar's metrics and the proxy record it; another organization's does not count
  for (const [owner, prompt, completion, cost] of [[org, 100, 20, 0.5], [org, 30, 10, 0.25], [other, 1000, 1000, 9]] as const) {
    const earlier = await aPendingRun(owner);
    await pool.query('SELECT * FROM record_proxy_usage($1, $2, $3, $4, $5)', [earlier, 'fake', prompt, completion, cost]);
  }
  const { budget } = await bootedAssignment(await aPendingRun(org));
  assert.deepEqual(budget, { run: { maxTokens: 1000, maxCostUsd: null }, org: { maxTokens: 340, maxCostUsd: 2.25 } });

  // a month used up leaves nothing
  await writeOrgBudget(pool, org.orgId, { run_max_tokens: null, run_max_cost_usd: null, monthly_max_tokens: 100, monthly_max_cost_usd: null });
  assert.deepEqual((await bootedAssignment(await aPendingRun(org))).budget, { run: null, org: { maxTokens: 0, maxCostUsd: null } });
});
