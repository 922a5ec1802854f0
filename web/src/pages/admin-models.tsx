// The organization's models and the provider credentials they use (keys are never shown back:
// only whether one is set and its hint).
import { useState } from 'preact/hooks';
import { api, unwrap } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { ConfirmButton } from '../ui/confirm.tsx';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { useAction } from '../ui/action.ts';

export function ModelsPage({ me }: { me: Me }) {
  const models = useLoad(() => unwrap(api.GET('/api/models')), []);
  const creds = useLoad(() => unwrap(api.GET('/api/model-provider-credentials')), []);
  const action = useAction();
  const [provider, setProvider] = useState('openai-compatible');
  const [name, setName] = useState('');
  const [baseUrl, setBaseUrl] = useState('');
  const [apiKey, setApiKey] = useState('');

  const addCredential = (e: SubmitEvent) => {
    e.preventDefault();
    void action.run(async () => {
      await unwrap(api.POST('/api/model-provider-credentials', { body: { provider, name, ...(baseUrl ? { base_url: baseUrl } : {}), ...(apiKey ? { api_key: apiKey } : {}) } }));
      setName('');
      setApiKey('');
      creds.reload();
    });
  };
  const makeDefault = (id: string) => action.run(async () => {
    await unwrap(api.PATCH('/api/models/{id}', { params: { path: { id } }, body: { is_default: true } }));
    models.reload();
  });

  return (
    <section>
      <h1 tabIndex={-1}>Models</h1>
      {action.error ? <ProblemView error={action.error} /> : null}
      {models.error ? <ProblemView error={models.error} /> : null}
      <table>
        <caption class="visually-hidden">Models of the organization</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Provider model</th><th scope="col">State</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
        <tbody>
          {(models.data?.data ?? []).map((m) => (
            <tr key={m.id}>
              <td>{m.name}{m.is_default ? <strong> (default)</strong> : null}</td><td><code>{m.provider}/{m.model}</code></td><td>{m.enabled ? 'enabled' : 'disabled'}</td>
              <td>{can(me, 'models:write') && !m.is_default ? <button type="button" class="small" onClick={() => void makeDefault(m.id)}>Make {m.name} the default</button> : null}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Provider credentials</h2>
      {creds.error ? <ProblemView error={creds.error} /> : null}
      <ul>
        {(creds.data?.data ?? []).map((c) => (
          <li key={c.id}>{c.name} — {c.provider} at <code>{c.base_url}</code>, key {c.api_key_set ? `set (${c.api_key_hint ?? 'hidden'})` : 'not set'}, {c.model_count} model(s)
            {' '}{can(me, 'models:delete') && c.model_count === 0 ? <ConfirmButton label={`Delete ${c.name}`} danger question={`Delete the credential ${c.name}?`} onConfirm={async () => {
              await unwrap(api.DELETE('/api/model-provider-credentials/{id}', { params: { path: { id: c.id } } }));
              creds.reload();
            }} /> : null}
          </li>
        ))}
      </ul>
      {can(me, 'models:write') ? (
        <form class="card" onSubmit={addCredential}>
          <h3>New provider credential</h3>
          <div class="field"><label for="cred-provider">Provider</label><input id="cred-provider" required value={provider} onInput={(e) => setProvider(e.currentTarget.value)} /></div>
          <div class="field"><label for="cred-name">Credential name</label><input id="cred-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} /></div>
          <div class="field"><label for="cred-url">Base URL</label><input id="cred-url" type="url" value={baseUrl} onInput={(e) => setBaseUrl(e.currentTarget.value)} /></div>
          <div class="field"><label for="cred-key">API key</label><input id="cred-key" type="password" autocomplete="off" value={apiKey} onInput={(e) => setApiKey(e.currentTarget.value)} /></div>
          <button type="submit" class="primary">Add credential</button>
        </form>
      ) : null}
    </section>
  );
}
