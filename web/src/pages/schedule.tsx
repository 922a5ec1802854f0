// One schedule: its cron in words, next fires, state with the reason it was disabled, its last
// fire and recent runs; enable, disable and edit, each sent with If-Match (a change made meanwhile
// is answered 412 and shown, never overwritten).
import { useState } from 'preact/hooks';
import { api, unwrap, type Schemas } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { href, navigate } from '../route.ts';
import { ConfirmButton } from '../ui/confirm.tsx';
import { describeCron } from '../ui/cron.ts';
import { json, when } from '../ui/format.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { CronWords, NextFires, ScheduleState } from '../ui/schedule-view.tsx';
import { RunTable } from './runs.tsx';

type Schedule = Schemas['Schedule'];

async function withEtag(call: Promise<{ data?: Schedule; response: Response }>): Promise<{ schedule: Schedule; etag: string }> {
  const answer = await call;
  return { schedule: await unwrap(Promise.resolve(answer)), etag: answer.response.headers.get('etag') ?? '' };
}

export function SchedulePage({ id, me }: { id: string; me: Me }) {
  const current = useLoad(() => withEtag(api.GET('/api/schedules/{id}', { params: { path: { id } } })), [id]);
  const runs = useLoad(() => unwrap(api.GET('/api/schedules/{id}/runs', { params: { path: { id }, query: { limit: 10 } } })), [id]);
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState<unknown>(null);

  if (current.error) return <section><h1 tabIndex={-1}>Schedule</h1><ProblemView error={current.error} /></section>;
  if (!current.data) return <section><h1 tabIndex={-1}>Schedule</h1><p>Loading…</p></section>;
  const { schedule: s, etag } = current.data;
  const writable = can(me, 'schedules:write');
  const path = { path: { id }, header: { 'If-Match': etag } };

  const act = async (call: Promise<{ data?: Schedule; response: Response }>) => {
    setError(null);
    try {
      const next = await withEtag(call);
      current.update(() => next);
      setEditing(false);
    } catch (err) {
      setError(err);
    }
  };

  return (
    <section>
      <h1 tabIndex={-1}>Schedule {s.name}</h1>
      <dl class="facts">
        <dt>Agent</dt><dd><a href={href(['agents', ...s.packageId.split('/')])}>{s.packageId}</a></dd>
        <dt>When</dt><dd><CronWords s={s} /></dd>
        <dt>State</dt><dd data-testid="schedule-state"><ScheduleState s={s} /></dd>
        <dt>Input</dt><dd><pre>{json(s.input ?? {})}</pre></dd>
        <dt>Last fire</dt><dd>{s.last_fire ? `${when(s.last_fire.fire_time)}: ${s.last_fire.outcome}${s.last_fire.error ? ` (${s.last_fire.error.code}: ${s.last_fire.error.message})` : ''}` : 'not fired yet'}</dd>
      </dl>
      <h2>Next fires</h2>
      <NextFires s={s} />
      {writable ? (
        <div class="actions" role="group" aria-label="Schedule actions">
          {s.enabled
            ? <button type="button" onClick={() => void act(api.POST('/api/schedules/{id}/disable', { params: path, body: {} }))}>Disable</button>
            : <button type="button" onClick={() => void act(api.POST('/api/schedules/{id}/enable', { params: path, body: {} }))}>Enable</button>}
          <button type="button" aria-expanded={editing} onClick={() => setEditing(!editing)}>Edit</button>
          {can(me, 'schedules:delete') ? <ConfirmButton label="Delete schedule" danger question={`Delete the schedule ${s.name}? Its runs stay.`} onConfirm={async () => {
            await api.DELETE('/api/schedules/{id}', { params: { path: { id } } });
            navigate(['schedules']);
          }} /> : null}
        </div>
      ) : null}
      {error ? <ProblemView error={error} onDismiss={() => { setError(null); current.reload(); }} /> : null}
      {editing ? <EditSchedule s={s} onSave={(patch) => void act(api.PATCH('/api/schedules/{id}', { params: path, body: patch }))} /> : null}
      <h2>Recent runs</h2>
      {runs.error ? <ProblemView error={runs.error} /> : null}
      {runs.data ? <RunTable runs={runs.data.data} /> : null}
    </section>
  );
}

function EditSchedule({ s, onSave }: { s: Schedule; onSave: (patch: { name: string; cron_expression: string; timezone: string }) => void }) {
  const [name, setName] = useState(s.name);
  const [cron, setCron] = useState(s.cron_expression);
  const [zone, setZone] = useState(s.timezone);
  return (
    <form class="card" onSubmit={(e) => { e.preventDefault(); onSave({ name, cron_expression: cron, timezone: zone }); }}>
      <div class="field"><label for="edit-name">Schedule name</label><input id="edit-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} /></div>
      <div class="field"><label for="edit-cron">Cron (5 fields)</label><input id="edit-cron" required aria-describedby="edit-cron-words" value={cron} onInput={(e) => setCron(e.currentTarget.value)} />
        <p id="edit-cron-words" class="help">{describeCron(cron, zone)}</p></div>
      <div class="field"><label for="edit-zone">Time zone (IANA)</label><input id="edit-zone" required value={zone} onInput={(e) => setZone(e.currentTarget.value)} /></div>
      <button type="submit" class="primary">Save</button>
    </form>
  );
}
