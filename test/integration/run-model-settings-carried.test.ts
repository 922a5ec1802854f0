// A run's model and model settings travel with it: a rerun runs on the original's model with its
// settings (unless the body says otherwise), and a schedule takes a model and model settings,
// checked like a launch's, stored, and used by every run it fires.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { scheduleActivitiesFor } from '../../api/services/schedules/activities.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';

const AGENT = '/api/agents/@fixtures/agent-echo';
const input = { message: 'carried' };
const YEARLY = { name: 'Yearly', cron_expression: '0 0 1 1 *', timezone: 'Europe/Paris', input };

let world: RunWorld;
let api: RunWorld['api'];
/** plain: temperature only (the default model of the world is another one); reasoner: low/high, no temperature */
const models = { plain: '', reasoner: '', spare: '' };

before(async () => {
  world = await aRunWorld();
  ({ api } = world);
  const aModel = async (name: string, body: Record<string, unknown>) => {
    const cred = await api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name, base_url: world.fake.url, api_key: 'sk-carried' });
    assert.equal(cred.status, 201, cred.text);
    const res = await api.post('/api/models', { credential_id: cred.body.id, model: 'fake', name, is_default: false, ...body });
    assert.equal(res.status, 201, res.text);
    return res.body.id as string;
  };
  models.plain = await aModel('Plain', {});
  models.reasoner = await aModel('Reasoner', { supports_temperature: false, reasoning_levels: ['low', 'high'] });
  models.spare = await aModel('Spare', { supports_temperature: false, reasoning_levels: ['high'] });
});
after(() => world.close());

async function launched(body: Record<string, unknown>) {
  const res = await api.post(`${AGENT}/run`, body);
  assert.equal(res.status, 201, res.text);
  return res.body;
}

describe('reruns', () => {
  test("a rerun runs on the original's model with its settings, not on the agent's or the organization's default", async () => {
    const original = await launched({ input, model_id: models.reasoner, model_settings: { reasoning_effort: 'high' } });
    const rerun = await launched({ rerun_from: original.id });
    assert.equal(rerun.rerun_of, original.id);
    assert.equal(rerun.model_id, models.reasoner);
    assert.deepEqual(rerun.model_settings, { temperature: null, reasoning_effort: 'high' });
    assert.deepEqual(rerun.input, input);
    const read = await api.get(`/api/runs/${rerun.id}`);
    assert.equal(read.body.model_id, models.reasoner);
    assert.deepEqual(read.body.model_settings, { temperature: null, reasoning_effort: 'high' });
  });

  test('the body still decides what it names: another model, other settings, or none ({})', async () => {
    const original = await launched({ input, model_id: models.plain, model_settings: { temperature: 0.3 } });
    const other = await launched({ rerun_from: original.id, model_settings: { temperature: 1.1 } });
    assert.equal(other.model_id, models.plain);
    assert.deepEqual(other.model_settings, { temperature: 1.1, reasoning_effort: null });
    const cleared = await launched({ rerun_from: original.id, model_settings: {} });
    assert.equal(cleared.model_id, models.plain);
    assert.equal(cleared.model_settings, null);
    // the original's settings are checked against the model the body names: refused, not dropped
    const refused = await api.post(`${AGENT}/run`, { rerun_from: original.id, model_id: models.reasoner });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.code, 'temperature_unsupported');
    assert.equal(refused.body.errors[0].field, 'model_settings.temperature');
  });

  test("a rerun whose original model is gone is refused model_not_configured: it never falls back to another model", async () => {
    const original = await launched({ input, model_id: models.spare });
    await world.app.deps.database.pool.query("UPDATE runs SET status = 'failed' WHERE id = $1", [original.id]);
    const deleted = await api.delete(`/api/models/${models.spare}`);
    assert.equal(deleted.status, 204, deleted.text);
    const rerun = await api.post(`${AGENT}/run`, { rerun_from: original.id });
    assert.equal(rerun.status, 400, rerun.text);
    assert.equal(rerun.body.code, 'model_not_configured');
  });
});

describe('schedules', () => {
  const fire = async (scheduleId: string, fireAt: string) => {
    const { rows } = await world.app.deps.database.pool.query('SELECT generation FROM schedules WHERE id = $1', [scheduleId]);
    return scheduleActivitiesFor(world.app.deps).fire(scheduleId, rows[0].generation, fireAt, 1, false);
  };

  test('create checks the model settings like a launch: refused with the launch\'s code and field, nothing created', async () => {
    const refused = await api.post(`${AGENT}/schedules`, { ...YEARLY, model_id: models.plain, model_settings: { reasoning_effort: 'low' } });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.code, 'reasoning_unsupported');
    assert.equal(refused.body.errors[0].field, 'model_settings.reasoning_effort');
    // without a model named, the organization's default (which does not reason) is the one checked
    const byDefault = await api.post(`${AGENT}/schedules`, { ...YEARLY, model_settings: { reasoning_effort: 'high' } });
    assert.equal(byDefault.body.code, 'reasoning_unsupported');
    const unknown = await api.post(`${AGENT}/schedules`, { ...YEARLY, model_id: 'model_nope' });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.code, 'model_not_configured');
    const listed = await api.get('/api/schedules');
    assert.equal(listed.body.data.length, 0);
  });

  test('a schedule stores its model and settings, shows them, and every run it fires carries them', async () => {
    const created = await api.post(`${AGENT}/schedules`, { ...YEARLY, model_id: models.reasoner, model_settings: { reasoning_effort: 'low' } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.model_id, models.reasoner);
    assert.deepEqual(created.body.model_settings, { temperature: null, reasoning_effort: 'low' });
    assert.deepEqual((await api.get(`/api/schedules/${created.body.id}`)).body.model_settings, { temperature: null, reasoning_effort: 'low' });

    const fired = await fire(created.body.id, '2031-01-01T00:00:00.000Z');
    assert.equal(fired.outcome, 'launched', JSON.stringify(fired));
    const run = (await api.get(`/api/runs/${(fired as { runId: string }).runId}`)).body;
    assert.equal(run.triggered_by.kind, 'schedule');
    assert.equal(run.model_id, models.reasoner);
    assert.deepEqual(run.model_settings, { temperature: null, reasoning_effort: 'low' });
  });

  test('update: new settings are checked against the schedule\'s model, null clears them, and the fire follows', async () => {
    const created = (await api.post(`${AGENT}/schedules`, { ...YEARLY, model_id: models.reasoner, model_settings: { reasoning_effort: 'high' } })).body;
    const refused = await api.patch(`/api/schedules/${created.id}`, { model_settings: { temperature: 0.5 } });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.code, 'temperature_unsupported');
    // switching to a model that refuses the stored settings is refused too
    const moved = await api.patch(`/api/schedules/${created.id}`, { model_id: models.plain });
    assert.equal(moved.body.code, 'reasoning_unsupported');

    const changed = await api.patch(`/api/schedules/${created.id}`, { model_id: models.plain, model_settings: { temperature: 0.9 } });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.model_id, models.plain);
    assert.deepEqual(changed.body.model_settings, { temperature: 0.9, reasoning_effort: null });
    const run = (await api.get(`/api/runs/${((await fire(created.id, '2032-01-01T00:00:00.000Z')) as { runId: string }).runId}`)).body;
    assert.equal(run.model_id, models.plain);
    assert.deepEqual(run.model_settings, { temperature: 0.9, reasoning_effort: null });

    const cleared = await api.patch(`/api/schedules/${created.id}`, { model_id: null, model_settings: null });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.model_id, null);
    assert.equal(cleared.body.model_settings, null);
    const plain = (await api.get(`/api/runs/${((await fire(created.id, '2033-01-01T00:00:00.000Z')) as { runId: string }).runId}`)).body;
    assert.notEqual(plain.model_id, models.plain, "the organization's default again");
    assert.equal(plain.model_settings, null);
  });
});
