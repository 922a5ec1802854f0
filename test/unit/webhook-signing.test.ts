// Webhook signatures as a receiver checks them with the standardwebhooks library: one secret, or
// the new and the previous one after a rotation (either verifies); a wrong secret or a changed
// body does not. And the retry schedule setting: positive seconds, or boot stops naming it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret, webhookHeaders } from '../../api/modules/webhooks/signing.ts';
import { loadConfig } from '../../lib/config.ts';

test('a message signed by the current and the previous secret verifies with either, and with nothing else', () => {
  const current = newWebhookSecret();
  const previous = newWebhookSecret();
  assert.match(current, /^whsec_[A-Za-z0-9+/]{43}=$/);
  const body = JSON.stringify({ type: 'run.success', timestamp: new Date().toISOString(), data: { id: 'run_1' } });
  const headers = webhookHeaders([current, previous], 'whd_1', Math.floor(Date.now() / 1000), body);
  assert.equal(headers['webhook-signature'].split(' ').length, 2);
  assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/=]+ v1,[A-Za-z0-9+/=]+$/);
  assert.deepEqual(new Webhook(current).verify(body, headers), JSON.parse(body));
  assert.deepEqual(new Webhook(previous).verify(body, headers), JSON.parse(body));
  assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers));
  assert.throws(() => new Webhook(current).verify(body.replace('run_1', 'run_2'), headers));
  const single = webhookHeaders([current], 'whd_1', Math.floor(Date.now() / 1000), body);
  assert.throws(() => new Webhook(previous).verify(body, single), 'a rotation past its 24 hours leaves the old secret out');
});

test('WEBHOOK_RETRY_SCHEDULE_SECONDS takes positive seconds; anything else stops boot naming it', () => {
  assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE_SECONDS: '0.5, 2,60' }).WEBHOOK_RETRY_SCHEDULE_SECONDS, [0.5, 2, 60]);
  const total = loadConfig({}).WEBHOOK_RETRY_SCHEDULE_SECONDS.reduce((s, d) => s + d, 0);
  assert.ok(total * 0.8 >= 24 * 3600, 'the default retries for at least 24 hours, jitter included');
  for (const bad of ['', '5,-1', '5,x', '0']) assert.throws(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE_SECONDS: bad }), /WEBHOOK_RETRY_SCHEDULE_SECONDS/, bad);
});
