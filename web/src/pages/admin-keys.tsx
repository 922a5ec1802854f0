// API keys of the space: a new key is shown once, with a copy button; revoking is immediate.
import { useState } from 'preact/hooks';
import { api, unwrap, type Schemas } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { ConfirmButton } from '../ui/confirm.tsx';
import { useAction } from '../ui/action.ts';
import { when } from '../ui/format.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { ShownOnce } from '../ui/once.tsx';

export function ApiKeysPage({ me }: { me: Me }) {
  const keys = useLoad(() => unwrap(api.GET('/api/api-keys')), []);
  const creating = can(me, 'api-keys:create');
  const scopes = useLoad(async () => (creating ? (await unwrap(api.GET('/api/api-keys/available-scopes'))).scopes : []), [creating]);
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [created, setCreated] = useState<Schemas['CreatedApiKey'] | null>(null);
  const action = useAction();

  const create = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      setCreated(await unwrap(api.POST('/api/api-keys', { body: { name, ...(chosen.length ? { scopes: chosen } : {}) } })));
      setName('');
      setChosen([]);
      keys.reload();
    });
  };

  return (
    <section>
      <h1 tabIndex={-1}>API keys</h1>
      {created ? <ShownOnce label="New API key" value={created.key} onDone={() => setCreated(null)}><strong>Your new key {created.name}.</strong></ShownOnce> : null}
      {creating ? (
        <form class="card" onSubmit={create}>
          <h2>New key</h2>
          <div class="field"><label for="key-name">Key name</label><input id="key-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} /></div>
          <fieldset>
            <legend>Scopes (none chosen: every scope you hold)</legend>
            <div class="scopes">
              {(scopes.data ?? []).map((s) => (
                <label key={s} class="check"><input type="checkbox" checked={chosen.includes(s)} onChange={(e) => setChosen(e.currentTarget.checked ? [...chosen, s] : chosen.filter((x) => x !== s))} /> {s}</label>
              ))}
            </div>
          </fieldset>
          <button type="submit" class="primary" disabled={action.busy}>Create key</button>
          {action.error ? <ProblemView error={action.error} /> : null}
        </form>
      ) : null}
      {keys.error ? <ProblemView error={keys.error} /> : null}
      {keys.data ? (
        <table>
          <caption class="visually-hidden">API keys of the space</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Scopes</th><th scope="col">Expires</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {keys.data.data.map((k) => (
              <tr key={k.id}>
                <td>{k.name}</td><td><code>{k.keyPrefix}</code></td><td class="wrap">{k.scopes.join(', ')}</td><td>{k.expiresAt ? when(k.expiresAt) : 'never'}</td><td>{when(k.createdAt)}</td>
                <td>{can(me, 'api-keys:delete') || me.userId === k.created_by ? <ConfirmButton label={`Revoke ${k.name}`} danger question={`Revoke the key ${k.name}? It stops working at once.`} onConfirm={async () => {
                  await api.DELETE('/api/api-keys/{id}', { params: { path: { id: k.id } } });
                  keys.reload();
                }} /> : null}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
