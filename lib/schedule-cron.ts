// Schedule times: a 5-field cron expression read in an IANA time zone (cron-parser). Daylight-saving
// time follows the zone: a wall time that does not exist (spring-forward gap) fires once, one hour
// later, at the instant the skipped hour would have had; a wall time that happens twice (fall-back
// repeat) fires once, at its first pass, unless the hour field is a wildcard or a step, whose
// interval then keeps running through both passes (real elapsed time).
import { CronExpressionParser } from 'cron-parser';

export class CronError extends Error {}
export class TimeZoneError extends Error {}

/** True for a zone name the runtime knows (IANA names and UTC); offsets and abbreviations are refused. */
export function isTimeZone(zone: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+\-]*(\/[A-Za-z0-9_+\-]+)*$/.test(zone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The first tick strictly after `after`. Throws CronError or TimeZoneError. */
export function nextFireAfter(expression: string, zone: string, after: Date): Date {
  if (!isTimeZone(zone)) throw new TimeZoneError(`${zone} is not an IANA time zone`);
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 || fields.some((f) => f.startsWith('@'))) {
    throw new CronError(`a cron expression has exactly 5 fields (minute hour day-of-month month day-of-week); got ${fields.length}`);
  }
  try {
    return CronExpressionParser.parse(fields.join(' '), { currentDate: after, tz: zone }).next().toDate();
  } catch (err) {
    throw new CronError((err as Error).message);
  }
}
