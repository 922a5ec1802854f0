// OAuth clients of the organization and space (oidc module); a confidential client's secret is
// shown once, at creation.
import { useState } from 'preact/hooks';
import { api, idempotencyKey, unwrap, type Schemas } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { ConfirmButton } from '../ui/confirm.tsx';
import { useAction } from '../ui/action.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { ShownOnce } from '../ui/once.tsx';

export function OAuthClientsPage({ me }: { me: Me }) {
  const list = useLoad(() => unwrap(api.GET('/api/oauth/clients', { params: { query: { limit: 100 } } })), []);
  const [name, setName] = useState('');
  const [redirect, setRedirect] = useState('');
  const [level, setLevel] = useState<'org' | 'space'>('org');
  const [created, setCreated] = useState<Schemas['OAuthClientWithSecret'] | null>(null);
  const action = useAction();

  const create = (e: SubmitEvent) => {
    e.preventDefault();
    void action.run(async () => {
      setCreated(await unwrap(api.POST('/api/oauth/clients', {
        params: { header: { 'Idempotency-Key': idempotencyKey() } },
        body: { level, name, redirect_uris: [redirect], scopes: ['runs:read'], token_endpoint_auth_method: 'client_secret_basic' },
      })));
      list.reload();
    });
  };

  return (
    <section>
      <h1 tabIndex={-1}>OAuth clients</h1>
      {created?.client_secret ? (
        <ShownOnce label="New client secret" value={created.client_secret} onDone={() => setCreated(null)}>
          <strong>The secret of {created.name}</strong> (client id <code>{created.id}</code>).
        </ShownOnce>
      ) : null}
      {list.error ? <ProblemView error={list.error} /> : null}
      <table>
        <caption class="visually-hidden">OAuth clients</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Client id</th><th scope="col">Level</th><th scope="col">Redirect URIs</th><th scope="col">Scopes</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
        <tbody>
          {(list.data?.data ?? []).map((c) => (
            <tr key={c.id}>
              <td>{c.name}</td><td><code>{c.id}</code></td><td>{c.level}</td><td class="wrap">{c.redirect_uris.join(' ')}</td><td class="wrap">{c.scopes.join(', ')}</td>
              <td>{can(me, 'oauth-clients:delete') ? <ConfirmButton label={`Delete ${c.name}`} danger question={`Delete ${c.name} and every token issued to it?`} onConfirm={async () => {
                await api.DELETE('/api/oauth/clients/{id}', { params: { path: { id: c.id } } });
                list.reload();
              }} /> : null}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {can(me, 'oauth-clients:write') ? (
        <form class="card" onSubmit={create}>
          <h2>New client</h2>
          <div class="field"><label for="client-name">Client name</label><input id="client-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} /></div>
          <div class="field"><label for="client-redirect">Redirect URI</label><input id="client-redirect" type="url" required value={redirect} onInput={(e) => setRedirect(e.currentTarget.value)} /></div>
          <div class="field"><label for="client-level">Level</label>
            <select id="client-level" value={level} onChange={(e) => setLevel(e.currentTarget.value as 'org' | 'space')}><option value="org">organization</option><option value="space">this space (end-users)</option></select></div>
          <button type="submit" class="primary" disabled={action.busy}>Create client</button>
          {action.error ? <ProblemView error={action.error} /> : null}
        </form>
      ) : null}
    </section>
  );
}
