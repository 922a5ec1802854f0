// Schedule ticks across daylight-saving changes in America/New_York (2026: clocks go forward at
// 02:00 on 8 March, back at 02:00 on 1 November), as docs/integrators.md "Schedules" documents them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CronError, TimeZoneError, isTimeZone, nextFireAfter } from '../../lib/schedule-cron.ts';
import { followingTick } from '../../workflows/schedule.ts';

const NY = 'America/New_York';
const ticks = (cron: string, from: string, n: number, zone = NY) => {
  const out: string[] = [];
  let at = new Date(from);
  for (let i = 0; i < n; i++) {
    at = nextFireAfter(cron, zone, at);
    out.push(at.toISOString());
  }
  return out;
};

test('spring forward: a daily 02:30 (a wall time that does not exist that day) fires once, at 03:30 EDT', () => {
  assert.deepEqual(ticks('30 2 * * *', '2026-03-07T12:00:00Z', 3), [
    '2026-03-08T07:30:00.000Z', // 03:30 EDT: the instant 02:30 EST would have been
    '2026-03-09T06:30:00.000Z', // 02:30 EDT
    '2026-03-10T06:30:00.000Z',
  ]);
});

test('spring forward: an hourly schedule skips the missing hour and never doubles', () => {
  assert.deepEqual(ticks('0 * * * *', '2026-03-08T05:30:00Z', 3), [
    '2026-03-08T06:00:00.000Z', // 01:00 EST
    '2026-03-08T07:00:00.000Z', // 03:00 EDT, one real hour later
    '2026-03-08T08:00:00.000Z',
  ]);
});

test('fall back: a daily 01:30 (a wall time that happens twice) fires once, at its first pass (EDT)', () => {
  assert.deepEqual(ticks('30 1 * * *', '2026-10-31T12:00:00Z', 2), [
    '2026-11-01T05:30:00.000Z', // 01:30 EDT; 01:30 EST (06:30Z) does not fire
    '2026-11-02T06:30:00.000Z', // 01:30 EST the next day
  ]);
});

test('fall back: an interval schedule keeps its interval through both passes of the repeated hour', () => {
  assert.deepEqual(ticks('*/30 * * * *', '2026-11-01T04:45:00Z', 4), [
    '2026-11-01T05:00:00.000Z', // 01:00 EDT
    '2026-11-01T05:30:00.000Z', // 01:30 EDT
    '2026-11-01T06:00:00.000Z', // 01:00 EST
    '2026-11-01T06:30:00.000Z', // 01:30 EST
  ]);
});

test('every minute is sixty real seconds apart across the change', () => {
  const out = ticks('* * * * *', '2026-11-01T05:58:30Z', 3);
  assert.deepEqual(out, ['2026-11-01T05:59:00.000Z', '2026-11-01T06:00:00.000Z', '2026-11-01T06:01:00.000Z']);
});

test('exactly five fields, a known zone', () => {
  for (const bad of ['* * * *', '* * * * * *', '@hourly', '60 * * * *']) assert.throws(() => nextFireAfter(bad, 'UTC', new Date()), CronError, bad);
  for (const bad of ['Mars/Base', '+01:00', 'EST5EDT ', '']) assert.throws(() => nextFireAfter('* * * * *', bad, new Date()), TimeZoneError, bad);
  assert.equal(isTimeZone('UTC'), true);
  assert.equal(isTimeZone('Europe/Paris'), true);
});

test('after an outage longer than five minutes, the next tick is the first after now, not a burst of old ones', () => {
  const view = { cronExpression: '* * * * *', timezone: NY };
  const fired = '2026-01-01T00:00:00.000Z';
  assert.equal(followingTick(view, fired, Date.parse('2026-01-01T00:00:30Z')), '2026-01-01T00:01:00.000Z');
  assert.equal(followingTick(view, fired, Date.parse('2026-01-01T00:03:10Z')), '2026-01-01T00:01:00.000Z');
  assert.equal(followingTick(view, fired, Date.parse('2026-01-01T01:00:10Z')), '2026-01-01T01:01:00.000Z');
});
