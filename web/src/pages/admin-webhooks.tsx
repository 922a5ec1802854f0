// Webhooks the caller may read, each with its deliveries and their attempts; a new webhook shows
// its signing secret once.
import { useState } from 'preact/hooks';
import { api, context, idempotencyKey, unwrap, type Schemas } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { ConfirmButton } from '../ui/confirm.tsx';
import { useAction } from '../ui/action.ts';
import { when } from '../ui/format.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { ShownOnce } from '../ui/once.tsx';

const EVENTS = ['run.started', 'run.success', 'run.failed', 'run.timeout', 'run.cancelled', 'run.approval_requested', 'run.approval_decided'] as const;
type Event = (typeof EVENTS)[number];

export function WebhooksPage({ me }: { me: Me }) {
  const list = useLoad(() => unwrap(api.GET('/api/webhooks', { params: { query: { spaceId: context.spaceId ?? undefined, limit: 100 } } })), []);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<Event[]>(['run.success', 'run.failed']);
  const [secret, setSecret] = useState<Schemas['WebhookWithSecret'] | null>(null);
  const action = useAction();
  const [open, setOpen] = useState<string | null>(null);

  const create = (e: SubmitEvent) => {
    e.preventDefault();
    void action.run(async () => {
      setSecret(await unwrap(api.POST('/api/webhooks', {
        params: { header: { 'Idempotency-Key': idempotencyKey() } },
        body: { level: 'space', spaceId: context.spaceId ?? undefined, url, events, payloadMode: 'summary' },
      })));
      setUrl('');
      list.reload();
    });
  };

  return (
    <section>
      <h1 tabIndex={-1}>Webhooks</h1>
      {secret ? <ShownOnce label="New webhook signing secret" value={secret.secret} onDone={() => setSecret(null)}><strong>The signing secret of {secret.url}.</strong></ShownOnce> : null}
      {can(me, 'webhooks:write') ? (
        <form class="card" onSubmit={create}>
          <h2>New webhook for this space</h2>
          <div class="field"><label for="hook-url">Endpoint URL</label><input id="hook-url" type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} /></div>
          <fieldset><legend>Events</legend>
            {EVENTS.map((ev) => <label key={ev} class="check"><input type="checkbox" checked={events.includes(ev)} onChange={(e) => setEvents(e.currentTarget.checked ? [...events, ev] : events.filter((x) => x !== ev))} /> {ev}</label>)}
          </fieldset>
          <button type="submit" class="primary" disabled={action.busy}>Create webhook</button>
          {action.error ? <ProblemView error={action.error} /> : null}
        </form>
      ) : null}
      {list.error ? <ProblemView error={list.error} /> : null}
      {list.data && !list.data.data.length ? <p>No webhook.</p> : null}
      {(list.data?.data ?? []).map((w) => (
        <section key={w.id} class="card" aria-labelledby={`hook-${w.id}`}>
          <h2 id={`hook-${w.id}`}><code>{w.url}</code></h2>
          <p>{w.level}-level, {w.enabled ? 'enabled' : 'disabled'}; events {w.events.join(', ')}; payload {w.payloadMode}.</p>
          <div class="actions">
            <button type="button" aria-expanded={open === w.id} onClick={() => setOpen(open === w.id ? null : w.id)}>Deliveries</button>
            {can(me, 'webhooks:delete') ? <ConfirmButton label="Delete webhook" danger question={`Delete the webhook to ${w.url} and its delivery log?`} onConfirm={async () => {
              await api.DELETE('/api/webhooks/{id}', { params: { path: { id: w.id } } });
              list.reload();
            }} /> : null}
          </div>
          {open === w.id ? <Deliveries id={w.id} /> : null}
        </section>
      ))}
    </section>
  );
}

function Deliveries({ id }: { id: string }) {
  const list = useLoad(() => unwrap(api.GET('/api/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: 50 } } })), [id]);
  if (list.error) return <ProblemView error={list.error} />;
  if (!list.data) return <p>Loading…</p>;
  if (!list.data.data.length) return <p>No delivery yet.</p>;
  return (
    <ul class="deliveries">
      {list.data.data.map((d) => (
        <li key={d.id}>
          <strong>{d.event}</strong> {d.status}, {d.attempt_count} attempt(s), {when(d.createdAt)}
          <ol>{d.attempts.map((a) => <li key={a.attempt}>attempt {a.attempt} at {when(a.started_at)}: {a.status_code ?? 'no answer'}{a.error ? ` (${a.error})` : ''}, {a.duration_ms} ms</li>)}</ol>
        </li>
      ))}
    </ul>
  );
}
