// The dashboard's reading of a schedule's cron: its next fires agree with the server's cron
// (cron-parser, as lib/schedule-cron.ts uses it) across zones, DST changes and cron's day rule,
// and it says the cron in words.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CronExpressionParser } from 'cron-parser';
import { describeCron, nextFires } from '../../web/src/ui/cron.ts';

const CASES: [string, string][] = [
  ['0 9 * * 1-5', 'Europe/Paris'],
  ['*/15 * * * *', 'UTC'],
  ['30 2 * * *', 'America/New_York'],
  ['0 2 * * *', 'Europe/Berlin'],
  ['0 0 1,15 * 1', 'Asia/Tokyo'],
  ['0 12 * jan,jul sun', 'Australia/Sydney'],
  ['5 4 29 2 *', 'America/Los_Angeles'],
  ['0 22 * * 7', 'Asia/Kolkata'],
  ['0-10/5 8-9 * * MON', 'Europe/London'],
];

for (const from of ['2025-03-29T12:00:00Z', '2025-10-25T23:30:00Z', '2025-12-31T23:59:00Z']) {
  test(`the next fires after ${from} are the server's`, () => {
    for (const [expr, zone] of CASES) {
      const server = CronExpressionParser.parse(expr, { tz: zone, currentDate: new Date(from) });
      const expected = Array.from({ length: 6 }, () => server.next().toDate().toISOString());
      assert.deepEqual(nextFires(expr, zone, new Date(from), 6).map((d) => d.toISOString()), expected, `${expr} in ${zone}`);
    }
  });
}

test('the cron in words, with its zone', () => {
  assert.equal(describeCron('0 9 * * 1-5', 'Europe/Paris'), 'At 09:00, Monday through Friday (Europe/Paris time)');
  assert.equal(describeCron('*/15 * * * *', 'UTC'), 'Every 15 minutes, every day (UTC time)');
  assert.equal(describeCron('0 12 * jan,jul sun', 'Australia/Sydney'), 'At 12:00, on Sunday, in January and July (Australia/Sydney time)');
  assert.equal(describeCron('0 0 1,15 * 1', 'Asia/Tokyo'), 'At 00:00, on Monday or on day 1, 15 of the month (Asia/Tokyo time)');
  assert.match(describeCron('61 * * * *', 'UTC'), /^Unreadable cron/);
});
