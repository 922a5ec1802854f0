// A schedule's 5-field cron in words, and the fires after its next one, in its IANA zone (the
// API gives next_run_at; the ones after it are worked out here, for reading only).

interface Field {
  any: boolean;
  values: number[];
  step: number | null;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const MONTH_NAMES = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

function parseField(text: string, min: number, max: number, names?: string[]): Field {
  const value = (s: string) => {
    const i = names ? names.indexOf(s.toLowerCase()) : -1;
    const n = i >= 0 ? i + min : Number(s);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`"${s}" is out of range`);
    return n;
  };
  const values = new Set<number>();
  let step: number | null = null;
  for (const part of text.split(',')) {
    const [range, stepText] = part.split('/');
    const by = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(by) || by < 1) throw new Error(`"${part}" has a bad step`);
    if (stepText !== undefined && text.split(',').length === 1 && range === '*') step = by;
    const [lo, hi] = range === '*' ? [min, max] : range.includes('-') ? range.split('-').map(value) : [value(range), stepText === undefined ? value(range) : max];
    for (let n = lo; n <= hi; n += by) values.add(n);
  }
  return { any: text === '*', values: [...values].sort((a, b) => a - b), step };
}

export interface Cron {
  minute: Field;
  hour: Field;
  day: Field;
  month: Field;
  weekday: Field;
}

export function parseCron(expr: string): Cron {
  const f = expr.trim().split(/\s+/);
  if (f.length !== 5) throw new Error('a cron expression has 5 fields');
  const weekday = parseField(f[4], 0, 7, DAYS);
  // 7 is Sunday too
  weekday.values = [...new Set(weekday.values.map((d) => d % 7))].sort((a, b) => a - b);
  return { minute: parseField(f[0], 0, 59), hour: parseField(f[1], 0, 23), day: parseField(f[2], 1, 31), month: parseField(f[3], 1, 12, MONTHS), weekday };
}

const DAY = 86_400_000;
const two = (n: number) => String(n).padStart(2, '0');

function listWords(values: number[], names: string[], offset: number): string {
  const words = values.map((v) => names[v - offset]);
  return words.length > 1 ? `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}` : words[0];
}

/** "At 09:00, Monday through Friday (Europe/Paris)". */
export function describeCron(expr: string, zone: string): string {
  let c: Cron;
  try {
    c = parseCron(expr);
  } catch (err) {
    return `Unreadable cron (${(err as Error).message})`;
  }
  let time: string;
  if (c.minute.any && c.hour.any) time = 'Every minute';
  else if (c.minute.step && c.hour.any) time = `Every ${c.minute.step} minutes`;
  else if (c.hour.any) time = `At minute ${c.minute.values.join(', ')} of every hour`;
  else if (c.minute.values.length * c.hour.values.length <= 4) time = `At ${c.hour.values.flatMap((h) => c.minute.values.map((m) => `${two(h)}:${two(m)}`)).join(', ')}`;
  else time = `At minute ${c.minute.values.join(', ')} of hours ${c.hour.values.join(', ')}`;
  const days: string[] = [];
  const wd = c.weekday.values;
  if (!c.weekday.any) days.push(wd.join(',') === '1,2,3,4,5' ? 'Monday through Friday' : `on ${listWords(wd, DAY_NAMES, 0)}`);
  if (!c.day.any) days.push(`on day ${c.day.values.join(', ')} of the month`);
  if (!c.month.any) days.push(`in ${listWords(c.month.values, MONTH_NAMES, 1)}`);
  return `${time}, ${days.length ? days.join(c.weekday.any || c.day.any ? ', ' : ' or ') : 'every day'} (${zone} time)`;
}

/** The zone's offset from UTC at an instant, in ms. */
function offsetAt(instant: number, zone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' }).formatToParts(instant);
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value);
  return Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second')) - Math.floor(instant / 1000) * 1000;
}

/**
 * The instant of a wall-clock time in the zone, as the server's cron reads it: a time a DST change
 * repeats is its first occurrence; a time a DST gap skips is read with the offset before the gap.
 */
function instantOf(y: number, mo: number, d: number, h: number, mi: number, zone: string): number {
  const wall = Date.UTC(y, mo, d, h, mi);
  const before = wall - offsetAt(wall - DAY, zone);
  const after = wall - offsetAt(wall + DAY, zone);
  const real = [before, after].filter((t) => t + offsetAt(t, zone) === wall);
  return real.length ? Math.min(...real) : before;
}

/** The next `count` fires strictly after `after`, in the zone. */
export function nextFires(expr: string, zone: string, after: Date, count: number): Date[] {
  const c = parseCron(expr);
  const out: Date[] = [];
  const startWall = new Date(after.getTime() + offsetAt(after.getTime(), zone));
  // 30 years: far enough for a 29 February every four years
  for (let i = 0; i < 366 * 30 && out.length < count; i++) {
    const day = new Date(Date.UTC(startWall.getUTCFullYear(), startWall.getUTCMonth(), startWall.getUTCDate() + i));
    if (!c.month.values.includes(day.getUTCMonth() + 1)) continue;
    const domOk = c.day.values.includes(day.getUTCDate());
    const dowOk = c.weekday.values.includes(day.getUTCDay());
    // cron's rule: with both restricted, either matches
    const matches = c.day.any && c.weekday.any ? true : c.day.any ? dowOk : c.weekday.any ? domOk : domOk || dowOk;
    if (!matches) continue;
    for (const h of c.hour.values) {
      for (const m of c.minute.values) {
        const t = instantOf(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), h, m, zone);
        if (t > after.getTime()) out.push(new Date(t));
        if (out.length >= count) return out;
      }
    }
  }
  return out;
}
