// The schedule's virtual object on a real Restate server over the real database: arming on
// create, one run per tick however often the tick is fired, re-arming and cancelling on change
// and delete, a fire refused by admission retried within its tick, and a creator who can no
// longer launch turning the fire into a disabled schedule with a readable reason.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScheduleArmer, type ScheduleArmerLoop } from '../../api/services/schedules/armer.ts';
import { scheduleActivitiesFor } from '../../api/services/schedules/activities.ts';
import { freePort } from '../../lib/free-port.ts';
import { createLogger } from '../../lib/log.ts';
import { queryInvocations, registerDeployment, sqlString } from '../../restate/admin.ts';
import { startRestateServer, type RestateServer } from '../../restate/launcher.ts';
import { startWorkflowEndpoint, type WorkflowEndpoint } from '../../workflows/endpoint.ts';
import { createScheduleClient } from '../../workflows/schedule-client.ts';
import { createScheduleObject } from '../../workflows/schedule.ts';
import type { FireRequest } from '../../workflows/schedule-types.ts';
import { aKey, aMember, aSession } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';
import { quietLogger } from '../support/run-workflow-world.ts';

let world: RunWorld;
let server: RestateServer;
let endpoint: WorkflowEndpoint;
let armer: ScheduleArmerLoop;
let baseDir: string;
const AGENT = '/api/agents/@fixtures/agent-echo';
// Once a year: the armed fire never comes due during the test; the test fires ticks itself.
const YEARLY = { name: 'Yearly', cron_expression: '0 0 1 1 *', timezone: 'America/New_York', input: { message: 'happy new year' } };

before(async () => {
  // one run at a time in the organization: the second tick's launch is refused by admission
  world = await aRunWorld({ env: { PLATFORM_RUN_LIMITS: '{"max_concurrent_per_org": 1}' } });
  baseDir = mkdtempSync(join(tmpdir(), 'restate-schedules-'));
  const [ingressPort, adminPort, nodePort, endpointPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  server = await startRestateServer({ baseDir, ingressPort, adminPort, nodePort, logFile: join(baseDir, 'restate.log') });
  endpoint = await startWorkflowEndpoint({ port: endpointPort, services: [createScheduleObject(scheduleActivitiesFor(world.app.deps))], logger: quietLogger });
  await registerDeployment(server.adminUrl, endpoint.url);
  armer = createScheduleArmer(world.app.deps.database.pool, createScheduleClient(server.ingressUrl), createLogger('error'));
  world.app.deps.schedules = armer;
});
after(async () => {
  await armer?.stop();
  await endpoint?.close();
  await server?.stop();
  if (baseDir) rmSync(baseDir, { recursive: true, force: true });
  await world?.close();
});

const pool = () => world.app.deps.database.pool;

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The fires armed for a schedule and not yet due. */
async function armedFires(id: string): Promise<number> {
  const rows = await queryInvocations(server.adminUrl,
    `SELECT id FROM sys_invocation WHERE target_service_name = 'schedule' AND target_service_key = ${sqlString(id)} AND target_handler_name = 'fire' AND status = 'scheduled'`);
  return rows.length;
}

async function row(id: string) {
  return (await pool().query('SELECT generation, armed_generation, next_run_at, enabled, disabled_reason, last_fire FROM schedules WHERE id = $1', [id])).rows[0];
}

/** Fires a tick through the engine, as the armed delayed call would, and waits for the handler to finish. */
async function fire(id: string, request: FireRequest): Promise<void> {
  const res = await fetch(`${server.ingressUrl}/schedule/${encodeURIComponent(id)}/fire`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request),
  });
  assert.equal(res.status, 200, await res.text());
}

const tick = (generation: number, fireAt: Date) =>
  ({ generation, fireAt: fireAt.toISOString(), attempt: 1, until: new Date(fireAt.getTime() + 600_000).toISOString() });

async function runsOf(id: string) {
  return (await pool().query('SELECT id, schedule_fire_at, actor_user_id, trigger_kind, status FROM runs WHERE schedule_id = $1 ORDER BY created_at', [id])).rows;
}

async function ownerApi() {
  const { key } = await aKey(pool(), { ...world.org, userId: world.org.ownerId });
  return client(world.app.url, { key });
}

test('a new schedule is armed at once; its tick fired twice at the same time makes one run, and moves it on', async () => {
  const api = await ownerApi();
  const s = (await api.post(`${AGENT}/schedules`, YEARLY)).body;
  await until('the schedule armed', async () => (await row(s.id)).armed_generation === 1);
  assert.equal(await armedFires(s.id), 1);

  const t = new Date(s.next_run_at);
  await Promise.all([fire(s.id, tick(1, t)), fire(s.id, tick(1, t)), fire(s.id, tick(1, t))]);
  const runs = await runsOf(s.id);
  assert.equal(runs.length, 1);
  assert.equal(runs[0].schedule_fire_at.toISOString(), t.toISOString());
  assert.equal(runs[0].trigger_kind, 'schedule');
  assert.equal(runs[0].actor_user_id, world.org.ownerId);

  const after = await row(s.id);
  const nextYear = new Date(t);
  nextYear.setUTCFullYear(t.getUTCFullYear() + 1);
  assert.equal(after.next_run_at.toISOString(), nextYear.toISOString());
  assert.equal(after.last_fire.outcome, 'launched');
  assert.equal(after.last_fire.run_id, runs[0].id);
  // the armed fire of this tick was replaced by the next tick's: still exactly one
  assert.equal(await armedFires(s.id), 1);
  const listed = await api.get(`/api/schedules/${s.id}/runs`);
  assert.deepEqual(listed.body.data.map((r: { id: string }) => r.id), [runs[0].id]);
  // the one run holds the organization's only slot for what follows
});

test('a fire refused by admission is recorded and retried within its tick, launching once capacity frees', async () => {
  const api = await ownerApi();
  const s = (await api.post(`${AGENT}/schedules`, { ...YEARLY, name: 'Refused first' })).body;
  await until('the schedule armed', async () => (await row(s.id)).armed_generation === 1);
  const t = new Date(s.next_run_at);
  await fire(s.id, tick(1, t));
  assert.equal((await runsOf(s.id)).length, 0);
  const refused = await row(s.id);
  assert.equal(refused.last_fire.outcome, 'refused');
  assert.equal(refused.last_fire.error.code, 'org_run_concurrency_exceeded');
  // (a retry may already have been refused again on a slow machine: one record per tick either way)
  const recorded = await pool().query('SELECT outcome FROM schedule_fires WHERE schedule_id = $1', [s.id]);
  assert.deepEqual(recorded.rows, [{ outcome: 'refused' }]);

  await pool().query(`UPDATE runs SET status = 'cancelled', finished_at = now() WHERE org_id = $1 AND status IN ('pending', 'running')`, [world.org.orgId]);
  const [run] = await until('the retried fire', async () => {
    const runs = await runsOf(s.id);
    return runs.length ? runs : null;
  });
  assert.equal(run.schedule_fire_at.toISOString(), t.toISOString());
  // the run is committed a moment before the fire records it
  const launched = await until('the launch recorded', async () => {
    const r = await row(s.id);
    return r.last_fire.outcome === 'launched' ? r : null;
  });
  assert.equal(launched.last_fire.run_id, run.id);
  assert.ok(launched.last_fire.attempts >= 2);
  await pool().query(`UPDATE runs SET status = 'cancelled', finished_at = now() WHERE org_id = $1 AND status IN ('pending', 'running')`, [world.org.orgId]);
});

test('a fire retried after its launch committed but before it was recorded (a crash between) records the launch, and launches nothing more', async () => {
  const api = await ownerApi();
  const s = (await api.post(`${AGENT}/schedules`, { ...YEARLY, name: 'Crashed between' })).body;
  await until('the schedule armed', async () => (await row(s.id)).armed_generation === 1);
  const t = new Date(s.next_run_at);
  await fire(s.id, tick(1, t));
  const [run] = await runsOf(s.id);
  assert.ok(run, 'the tick launched a run');
  // what a crash between the launch and its record leaves: the run, and the tick's earlier refusal
  const stale = { fire_time: t.toISOString(), outcome: 'refused', run_id: null, attempts: 1, error: { code: 'org_run_concurrency_exceeded', message: 'full' } };
  await pool().query('UPDATE schedules SET last_fire = $2 WHERE id = $1', [s.id, stale]);
  await pool().query(`UPDATE schedule_fires SET outcome = 'refused', run_id = NULL WHERE schedule_id = $1`, [s.id]);
  await fire(s.id, { ...tick(1, t), attempt: 2 });
  assert.deepEqual((await runsOf(s.id)).map((r) => r.id), [run.id]);
  const recorded = await row(s.id);
  assert.equal(recorded.last_fire.outcome, 'launched');
  assert.equal(recorded.last_fire.run_id, run.id);
  const fires = await pool().query('SELECT outcome, run_id FROM schedule_fires WHERE schedule_id = $1', [s.id]);
  assert.deepEqual(fires.rows, [{ outcome: 'launched', run_id: run.id }]);
  await pool().query(`UPDATE runs SET status = 'cancelled', finished_at = now() WHERE org_id = $1 AND status IN ('pending', 'running')`, [world.org.orgId]);
});

test('disabling cancels the armed fire and a fire armed before the change does nothing; delete cancels too', async () => {
  const api = await ownerApi();
  const s = (await api.post(`${AGENT}/schedules`, { ...YEARLY, name: 'Switched off' })).body;
  await until('the schedule armed', async () => (await armedFires(s.id)) === 1);
  const off = await api.post(`/api/schedules/${s.id}/disable`, {});
  assert.equal(off.status, 200);
  await until('the armed fire cancelled', async () => (await armedFires(s.id)) === 0 && (await row(s.id)).armed_generation === 2);
  await fire(s.id, tick(1, new Date(s.next_run_at)));
  assert.equal((await runsOf(s.id)).length, 0);

  const on = await api.post(`/api/schedules/${s.id}/enable`, {});
  assert.equal(on.status, 200);
  await until('armed again', async () => (await armedFires(s.id)) === 1);
  assert.equal((await api.delete(`/api/schedules/${s.id}`)).status, 204);
  await until('the armed fire cancelled on delete', async () => (await armedFires(s.id)) === 0);
});

test('a creator removed from the space: the schedule is disabled with a readable reason and fires no more', async () => {
  const memberId = await aMember(pool(), world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'runner' });
  const { key } = await aKey(pool(), { ...world.org, userId: memberId });
  const s = (await client(world.app.url, { key }).post(`${AGENT}/schedules`, { ...YEARLY, name: 'Member' })).body;
  await until('the schedule armed', async () => (await armedFires(s.id)) === 1);

  const { cookie } = await aSession(pool(), world.org.ownerId);
  const removed = await client(world.app.url, { cookie, org: world.org.orgId }).delete(`/api/spaces/${world.org.spaceId}/members/${memberId}`);
  assert.equal(removed.status, 204);
  const read = (await (await ownerApi()).get(`/api/schedules/${s.id}`)).body;
  assert.equal(read.enabled, false);
  assert.match(read.disabled_reason, /creator no longer has access/);

  // the fire armed before the removal comes due: nothing is launched
  await fire(s.id, tick(1, new Date(s.next_run_at)));
  assert.equal((await runsOf(s.id)).length, 0);
  // and the sweep hands the new generation to the object, which cancels the armed fire
  await until('the armed fire cancelled', async () => {
    await armer.sweep();
    return (await armedFires(s.id)) === 0;
  });
});

test('a creator who lost agents:run by a path that did not disable the schedule: the fire disables it instead', async () => {
  const memberId = await aMember(pool(), world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'runner' });
  const { key } = await aKey(pool(), { ...world.org, userId: memberId });
  const s = (await client(world.app.url, { key }).post(`${AGENT}/schedules`, { ...YEARLY, name: 'Demoted' })).body;
  await until('the schedule armed', async () => (await armedFires(s.id)) === 1);
  await pool().query(`UPDATE space_members SET role_key = 'viewer' WHERE space_id = $1 AND user_id = $2`, [world.org.spaceId, memberId]);

  await fire(s.id, tick(1, new Date(s.next_run_at)));
  assert.equal((await runsOf(s.id)).length, 0);
  const after = await row(s.id);
  assert.equal(after.enabled, false);
  assert.match(after.disabled_reason, /creator no longer has access/);
  assert.equal(after.last_fire.outcome, 'skipped');
  assert.equal(after.last_fire.error.code, 'schedule_actor_invalid');
});
