// The space's schedules: what each runs, when, and whether it is on.
import { api, unwrap, type Schemas } from '../api/client.ts';
import type { Me } from '../api/me.ts';
import { href } from '../route.ts';
import { when } from '../ui/format.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { CronWords, ScheduleState } from '../ui/schedule-view.tsx';

export function SchedulesPage(_: { me: Me }) {
  const list = useLoad(() => unwrap(api.GET('/api/schedules', { params: { query: { limit: 100 } } })), []);
  return (
    <section>
      <h1 tabIndex={-1}>Schedules</h1>
      <p>New schedules are made from an agent's page.</p>
      {list.error ? <ProblemView error={list.error} /> : null}
      {list.data ? <ScheduleTable schedules={list.data.data} /> : <p>Loading…</p>}
    </section>
  );
}

export function ScheduleTable({ schedules }: { schedules: Schemas['Schedule'][] }) {
  if (!schedules.length) return <p>No schedule yet.</p>;
  return (
    <table>
      <caption class="visually-hidden">Schedules</caption>
      <thead><tr><th scope="col">Schedule</th><th scope="col">Agent</th><th scope="col">When</th><th scope="col">Next fire</th><th scope="col">State</th></tr></thead>
      <tbody>
        {schedules.map((s) => (
          <tr key={s.id}>
            <td><a href={href(['schedules', s.id])}>{s.name}</a></td>
            <td>{s.packageId}</td>
            <td><CronWords s={s} /></td>
            <td>{s.enabled ? when(s.next_run_at) : '—'}</td>
            <td><ScheduleState s={s} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
