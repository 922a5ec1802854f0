// Before a launch: which connection each integration of the agent would use for the caller, and
// for those without one, a link to connect (the hosted connect flow).
import { agentParams, api, unwrap } from '../api/client.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { useAction } from '../ui/action.ts';

export function Readiness({ packageId }: { packageId: string }) {
  const ready = useLoad(() => unwrap(api.GET('/api/agents/{scope}/{name}/connection-readiness', { params: { path: agentParams(packageId) } })), [packageId]);
  if (ready.error) return <ProblemView error={ready.error} />;
  const r = ready.data;
  if (!r || r.ready) return r ? <p class="ready">Ready to launch: every integration has what it needs.</p> : null;
  return (
    <div class="not-ready" role="region" aria-label="Readiness problems">
      <p><strong>Not ready:</strong> a launch now would be refused until these are connected.</p>
      <ul>
        {r.integrations.filter((i) => !i.ready).map((i) => (
          <li key={i.packageId}>
            <code>{i.packageId}</code>: {i.needs_reconnection ? 'its connection needs reconnecting' : i.missing_scopes.length ? `missing scopes ${i.missing_scopes.join(', ')}` : 'no connection'}
            {' '}<ConnectButton integration={i.packageId} authKey={i.required_auth_key ?? i.available_auth_keys[0] ?? null} connectionId={i.needs_reconnection ? i.connection_id : null} onDone={ready.reload} />
          </li>
        ))}
      </ul>
    </div>
  );
}

/** Opens a single-use hosted connect link (new or reconnect) in a new tab. */
export function ConnectButton({ integration, authKey, connectionId, onDone }: { integration: string; authKey: string | null; connectionId: string | null; onDone?: () => void }) {
  const connecting = useAction();
  if (!authKey) return null;
  const connect = () => connecting.run(async () => {
    const link = await unwrap(api.POST('/api/integrations/{scope}/{name}/auths/{auth_key}/connect/session', {
      params: { path: { ...agentParams(integration), auth_key: authKey } },
      body: connectionId ? { connection_id: connectionId } : {},
    }));
    window.open(link.connect_url, '_blank', 'noopener');
    onDone?.();
  });
  return (
    <>
      <button type="button" class="small" onClick={() => void connect()}>{connectionId ? 'Reconnect' : 'Connect'} {integration}</button>
      {connecting.error ? <ProblemView error={connecting.error} /> : null}
    </>
  );
}
