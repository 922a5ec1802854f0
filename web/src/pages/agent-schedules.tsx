// An agent's schedules, and a new one: name, cron, time zone and the input of its runs.
import { useState } from 'preact/hooks';
import { agentParams, api, unwrap } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { navigate } from '../route.ts';
import { describeCron } from '../ui/cron.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { useAction } from '../ui/action.ts';
import { SchemaForm, type JsonSchema } from '../ui/schema-form.tsx';
import { ScheduleTable } from './schedules.tsx';

export function AgentSchedules({ packageId, me, schema, locked }: { packageId: string; me: Me; schema: JsonSchema; locked: Record<string, unknown> }) {
  const path = agentParams(packageId);
  const list = useLoad(() => unwrap(api.GET('/api/agents/{scope}/{name}/schedules', { params: { path, query: { limit: 100 } } })), [packageId]);
  const [name, setName] = useState('');
  const [cron, setCron] = useState('0 9 * * 1-5');
  const [zone, setZone] = useState(() => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC');
  const creating = useAction();

  const create = (input: Record<string, unknown>) => creating.run(async () => {
    const s = await unwrap(api.POST('/api/agents/{scope}/{name}/schedules', { params: { path }, body: { name, cron_expression: cron, timezone: zone, input } }));
    navigate(['schedules', s.id]);
  });

  return (
    <section aria-labelledby="schedules-heading">
      <h2 id="schedules-heading">Schedules</h2>
      {list.error ? <ProblemView error={list.error} /> : null}
      {list.data ? <ScheduleTable schedules={list.data.data} /> : null}
      {can(me, 'schedules:write') ? (
        <details class="card">
          <summary>New schedule</summary>
          <div class="field"><label for="schedule-name">Schedule name</label><input id="schedule-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} /></div>
          <div class="field">
            <label for="schedule-cron">Cron (5 fields)</label>
            <input id="schedule-cron" required aria-describedby="schedule-cron-words" value={cron} onInput={(e) => setCron(e.currentTarget.value)} />
            <p id="schedule-cron-words" class="help">{describeCron(cron, zone)}</p>
          </div>
          <div class="field"><label for="schedule-zone">Time zone (IANA)</label><input id="schedule-zone" required value={zone} onInput={(e) => setZone(e.currentTarget.value)} /></div>
          <SchemaForm idPrefix="schedule-input" schema={schema} locked={locked} submitLabel="Create schedule" busy={creating.busy} onSubmit={(input) => void create(input)} />
          {creating.error ? <ProblemView error={creating.error} /> : null}
        </details>
      ) : null}
    </section>
  );
}
