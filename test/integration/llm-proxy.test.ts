// /api/llm-proxy/* against the scripted model as the provider: the run named by X-Run-Id gives the
// model and the cost ledger; LLM_PROXY_LIMITS; the organization's budgets end a run over its own
// and refuse calls once the month's budget is used.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { aKey, anOrg, aSession, type BuiltOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { aCredential, aModel, aModelWorld, PROVIDER_KEY, type ModelWorld } from './models-harness.ts';

let w: ModelWorld;
let n = 0;

async function aRun(org: BuiltOrg, opts: { spaceId?: string; status?: string; modelId?: string | null } = {}): Promise<string> {
  const id = `run_proxy${++n}_${Math.random().toString(36).slice(2, 8)}`;
  await w.app.deps.database.pool.query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at, model_id)
     VALUES ($1, $2, $3, '@acme/agent', '1.0.0', $4, 'member', $5, 60, $6, now() + interval '1 hour', $7)`,
    [id, org.orgId, opts.spaceId ?? org.spaceId, opts.status ?? 'running', org.ownerId, w.app.deps.secrets.seal(newRunEventSecret()), opts.modelId ?? null],
  );
  return id;
}

async function proxyKey(org: BuiltOrg = w.org): Promise<string> {
  return (await aKey(w.app.deps.database.pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, scopes: ['llm-proxy:call'] })).key;
}

const completion = (key: string, runId: string | undefined, body: unknown = { model: 'anything', messages: [{ role: 'user', content: 'hi' }] }) =>
  call(w.app.url, 'POST', '/api/llm-proxy/chat/completions', { key, body, headers: runId ? { 'x-run-id': runId } : {} });

async function ledger(runId: string) {
  const pool = w.app.deps.database.pool;
  const run = (await pool.query('SELECT status, error, prompt_tokens, completion_tokens FROM runs WHERE id = $1', [runId])).rows[0];
  const usage = (await pool.query('SELECT sequence, model, prompt_tokens, completion_tokens FROM run_usage WHERE run_id = $1 ORDER BY sequence DESC', [runId])).rows;
  return { run, usage };
}

before(async () => {
  w = await aModelWorld({ env: { LLM_PROXY_LIMITS: '{"rate_per_min":6,"max_request_bytes":4096}' } });
  const credential = await aCredential(w);
  await aModel(w, credential.id, { is_default: true });
});
after(() => w.close());

describe('the LLM proxy', () => {
  test('a call needs X-Run-Id naming an open run of the caller\'s space: usage_context_required otherwise', async () => {
    const key = await proxyKey();
    const other = await anOrg(w.app.deps.database.pool);
    const otherSpace = (await w.app.deps.database.pool.query(
      `INSERT INTO spaces (id, org_id, name, kind) VALUES ('spc_proxy_other', $1, 'Other', 'team') RETURNING id`, [w.org.orgId],
    )).rows[0].id as string;
    const cases = [
      undefined,
      'not-a-run-id',
      'run_does_not_exist',
      await aRun(other),
      await aRun(w.org, { spaceId: otherSpace }),
      await aRun(w.org, { status: 'success' }),
    ];
    const before = w.model.requests.length;
    for (const runId of cases) {
      const res = await completion(key, runId);
      assert.equal(res.status, 400, `${runId}: ${res.text}`);
      assert.equal(res.body.code, 'usage_context_required');
    }
    const models = await call(w.app.url, 'GET', '/api/llm-proxy/models', { key });
    assert.equal(models.body.code, 'usage_context_required');
    assert.equal(w.model.requests.length, before, 'the provider was never called');
  });

  test("the run's model answers with the organization's key, and the usage lands in the run's cost ledger", async () => {
    const key = await proxyKey();
    const runId = await aRun(w.org);
    const res = await completion(key, runId);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.object, 'chat.completion');
    const seen = w.model.requests.at(-1)!;
    assert.equal(seen.authorization, `Bearer ${PROVIDER_KEY}`);
    assert.equal(seen.model, 'fake', "the run's model, whatever the body named");

    const streamed = await call(w.app.url, 'POST', '/api/llm-proxy/chat/completions', {
      key, headers: { 'x-run-id': runId }, body: { messages: [{ role: 'user', content: 'hi' }], stream: true },
    });
    assert.equal(streamed.status, 200);
    assert.match(streamed.headers.get('content-type') ?? '', /text\/event-stream/);
    assert.match(streamed.text, /data: \[DONE\]/);

    const { run, usage } = await ledger(runId);
    assert.equal(Number(run.prompt_tokens), 20);
    assert.equal(Number(run.completion_tokens), 10);
    assert.deepEqual(usage.map((u) => [u.sequence, u.model, u.prompt_tokens, u.completion_tokens]), [[-1, 'fake', 10, 5], [-2, 'fake', 10, 5]]);
    const models = await call(w.app.url, 'GET', '/api/llm-proxy/models', { key, headers: { 'x-run-id': runId } });
    assert.deepEqual(models.body.data.map((m: { id: string }) => m.id), ['fake']);
  });

  test('LLM_PROXY_LIMITS: bodies over max_request_bytes are payload_too_large; calls past rate_per_min are rate_limited', async () => {
    const key = await proxyKey();
    const runId = await aRun(w.org);
    const big = await completion(key, runId, { messages: [{ role: 'user', content: 'x'.repeat(5000) }] });
    assert.equal(big.status, 413);
    assert.equal(big.body.code, 'payload_too_large');
    // a fixed window: should a minute boundary pass mid-way, the count starts once more
    const statuses: number[] = [];
    let limited: Awaited<ReturnType<typeof completion>> | undefined;
    for (let i = 0; i < 13 && !limited; i++) {
      const res = await completion(key, runId);
      if (res.status === 429) limited = res;
      else statuses.push(res.status);
    }
    assert.ok(limited, 'no call was rate limited');
    assert.equal(limited.body.code, 'rate_limited');
    assert.ok(statuses.length >= 5 && statuses.every((s) => s === 200), `before the limit: ${statuses}`);
  });
});

describe('model budgets', () => {
  test('a budget is set per organization by its admins and read with the month\'s usage', async () => {
    const org = await anOrg(w.app.deps.database.pool);
    const { cookie } = await aSession(w.app.deps.database.pool, org.ownerId);
    const empty = await call(w.app.url, 'GET', `/api/orgs/${org.orgId}/budget`, { cookie });
    assert.equal(empty.status, 200);
    assert.equal(empty.body.monthly_max_tokens, null);
    assert.equal(empty.body.usage.tokens, 0);
    const set = await call(w.app.url, 'PUT', `/api/orgs/${org.orgId}/budget`, { cookie, body: { run_max_tokens: 100, monthly_max_cost_usd: 2.5 } });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.run_max_tokens, 100);
    assert.equal(set.body.monthly_max_cost_usd, 2.5);
    assert.equal(set.body.monthly_max_tokens, null);
    const now = new Date();
    assert.equal(set.body.usage.resets_at, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
    const bad = await call(w.app.url, 'PUT', `/api/orgs/${org.orgId}/budget`, { cookie, body: { run_max_tokens: -1 } });
    assert.equal(bad.status, 400);
  });

  test('a run over its budget ends failed run_budget_exceeded; an organization over its month is refused org_budget_exceeded', async () => {
    const org = await anOrg(w.app.deps.database.pool);
    const { cookie } = await aSession(w.app.deps.database.pool, org.ownerId);
    const credential = await (await call(w.app.url, 'POST', '/api/model-provider-credentials', {
      cookie, org: org.orgId, body: { provider: 'openai-compatible', name: 'Local', base_url: w.model.url, api_key: PROVIDER_KEY },
    })).body;
    const model = await call(w.app.url, 'POST', '/api/models', { cookie, org: org.orgId, body: { credential_id: credential.id, model: 'fake', name: 'Fake', is_default: true } });
    assert.equal(model.status, 201, model.text);
    const key = await proxyKey(org);
    // each call of the scripted model uses 15 tokens
    await call(w.app.url, 'PUT', `/api/orgs/${org.orgId}/budget`, { cookie, body: { run_max_tokens: 20 } });

    const runId = await aRun(org);
    assert.equal((await completion(key, runId)).status, 200);
    assert.equal((await ledger(runId)).run.status, 'running', 'under its budget');
    // the second call crosses 20 tokens: answered, and the run ends with it
    assert.equal((await completion(key, runId)).status, 200);
    const { run } = await ledger(runId);
    assert.equal(run.status, 'failed');
    assert.equal(run.error.code, 'run_budget_exceeded');
    assert.equal((await completion(key, runId)).body.code, 'usage_context_required', 'an ended run is no usage context');

    // the month so far: 30 tokens; a monthly budget of 30 leaves nothing
    await call(w.app.url, 'PUT', `/api/orgs/${org.orgId}/budget`, { cookie, body: { monthly_max_tokens: 30 } });
    const budget = await call(w.app.url, 'GET', `/api/orgs/${org.orgId}/budget`, { cookie });
    assert.equal(budget.body.usage.tokens, 30);
    const before = w.model.requests.length;
    const another = await aRun(org);
    const refused = await completion(key, another);
    assert.equal(refused.status, 402);
    assert.equal(refused.body.code, 'org_budget_exceeded');
    assert.equal(w.model.requests.length, before);
    assert.equal((await ledger(another)).run.status, 'running', 'the organization budget refuses calls, it does not end runs');
    // raising the budget lets calls through again
    await call(w.app.url, 'PUT', `/api/orgs/${org.orgId}/budget`, { cookie, body: { monthly_max_tokens: 1000 } });
    assert.equal((await completion(key, another)).status, 200);
  });
});
