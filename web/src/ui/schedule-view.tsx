// How a schedule reads: its cron in words in its zone, the fires to come, and whether it is on.
import type { Schemas } from '../api/client.ts';
import { describeCron, nextFires } from './cron.ts';
import { when } from './format.ts';

export function ScheduleState({ s }: { s: Schemas['Schedule'] }) {
  return s.enabled
    ? <span class="state state-on"><span aria-hidden="true">● </span>enabled</span>
    : <span class="state state-off"><span aria-hidden="true">○ </span>disabled{s.disabled_reason ? `: ${s.disabled_reason}` : ''}</span>;
}

export function CronWords({ s }: { s: Schemas['Schedule'] }) {
  return <span>{describeCron(s.cron_expression, s.timezone)} <code class="muted">{s.cron_expression}</code></span>;
}

/** The next fire as the API armed it, then the following ones from the same cron. */
export function NextFires({ s, count = 5 }: { s: Schemas['Schedule']; count?: number }) {
  if (!s.enabled || !s.next_run_at) return <p>No fire to come while it is disabled.</p>;
  let later: Date[] = [];
  try {
    later = nextFires(s.cron_expression, s.timezone, new Date(s.next_run_at), count - 1);
  } catch {
    later = [];
  }
  return (
    <ol class="fires" aria-label="Next fires">
      <li><time dateTime={s.next_run_at}>{when(s.next_run_at)}</time></li>
      {later.map((d) => <li key={d.toISOString()}><time dateTime={d.toISOString()}>{when(d.toISOString())}</time></li>)}
    </ol>
  );
}
