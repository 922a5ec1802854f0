// Integrations usable in the space and the caller's connections to them: connect through the
// hosted connect flow, reconnect one that needs it, disconnect. Changes arrive live.
import { useEffect } from 'preact/hooks';
import { api, unwrap } from '../api/client.ts';
import { subscribe } from '../api/live.ts';
import { can, type Me } from '../api/me.ts';
import { ConfirmButton } from '../ui/confirm.tsx';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { ConnectButton } from './agent-readiness.tsx';

export function ConnectionsPage({ me }: { me: Me }) {
  const list = useLoad(() => unwrap(api.GET('/api/integrations', { params: { query: { limit: 100 } } })), []);
  useEffect(() => {
    if (!can(me, 'runs:read')) return;
    return subscribe('/api/realtime/runs', { connection_update: () => list.reload() }, { channels: 'connection_update' });
  }, []);
  const connect = can(me, 'integrations:connect');
  return (
    <section>
      <h1 tabIndex={-1}>Connections</h1>
      {list.error ? <ProblemView error={list.error} /> : null}
      {list.data && !list.data.data.length ? <p>No integration is usable in this space.</p> : null}
      {(list.data?.data ?? []).map((i) => (
        <section key={i.packageId} class="card" aria-labelledby={`int-${i.packageId}`}>
          <h2 id={`int-${i.packageId}`}>{i.display_name ?? i.packageId} <code class="muted">{i.packageId}</code></h2>
          {i.description ? <p>{i.description}</p> : null}
          {i.auths.map((a) => (
            <div key={a.key}>
              <h3>Sign-in method <code>{a.key}</code> ({a.type})</h3>
              {a.connections.length ? (
                <ul>
                  {a.connections.map((c) => (
                    <li key={c.id}>
                      {c.label} <span class="muted">({c.account_id})</span>
                      {c.needs_reconnection ? <strong class="warn"> — needs reconnection</strong> : <span> — connected</span>}
                      {c.shared_with_org ? ' (shared with the organization)' : ''}
                      {' '}{connect && c.owned_by_actor ? <ConnectButton integration={i.packageId} authKey={a.key} connectionId={c.id} onDone={list.reload} /> : null}
                      {' '}{can(me, 'integrations:disconnect') && c.owned_by_actor ? <ConfirmButton label={`Disconnect ${c.label}`} danger question={`Disconnect ${c.label}? Runs that use it will need another connection.`} onConfirm={async () => {
                        await api.DELETE('/api/connections/{id}', { params: { path: { id: c.id } } });
                        list.reload();
                      }} /> : null}
                    </li>
                  ))}
                </ul>
              ) : <p>No connection yet.</p>}
              {connect ? <ConnectButton integration={i.packageId} authKey={a.key} connectionId={null} onDone={list.reload} /> : null}
            </div>
          ))}
        </section>
      ))}
    </section>
  );
}
