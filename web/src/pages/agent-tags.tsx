// An agent's dist-tags: which version each name points at; writers move or remove them.
import { useState } from 'preact/hooks';
import { agentParams, api, unwrap, type Schemas } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { ConfirmButton } from '../ui/confirm.tsx';
import { ProblemView } from '../ui/problem.tsx';
import { useAction } from '../ui/action.ts';

export function DistTags({ pkg, me, onChanged }: { pkg: Schemas['Package']; me: Me; onChanged: () => void }) {
  const tags = Object.entries(pkg.dist_tags as Record<string, string>);
  const path = agentParams(pkg.packageId);
  const [tag, setTag] = useState('');
  const [version, setVersion] = useState(pkg.latest_version ?? '');
  const pointing = useAction();
  const writable = can(me, 'agents:write') && pkg.home_writable;
  const point = (e: Event) => {
    e.preventDefault();
    void pointing.run(async () => {
      await unwrap(api.PUT('/api/packages/{scope}/{name}/dist-tags/{tag}', { params: { path: { ...path, tag } }, body: { version } }));
      setTag('');
      onChanged();
    });
  };
  return (
    <>
      <h2>Dist-tags</h2>
      {tags.length ? (
        <ul>
          {tags.map(([t, v]) => (
            <li key={t}><code>{t}</code> → {v}{' '}
              {writable && t !== 'latest' ? <ConfirmButton label={`Remove tag ${t}`} question={`Remove the dist-tag ${t}?`} onConfirm={async () => {
                await unwrap(api.DELETE('/api/packages/{scope}/{name}/dist-tags/{tag}', { params: { path: { ...path, tag: t } } }));
                onChanged();
              }} /> : null}
            </li>
          ))}
        </ul>
      ) : <p>No dist-tag.</p>}
      {writable && pkg.versions.length ? (
        <form class="inline" onSubmit={point}>
          <label for="tag-name">Tag</label>
          <input id="tag-name" required value={tag} onInput={(e) => setTag(e.currentTarget.value)} />
          <label for="tag-version">Version</label>
          <select id="tag-version" value={version} onChange={(e) => setVersion(e.currentTarget.value)}>
            {pkg.versions.map((v) => <option key={v.version} value={v.version}>{v.version}</option>)}
          </select>
          <button type="submit">Point tag</button>
        </form>
      ) : null}
      {pointing.error ? <ProblemView error={pointing.error} /> : null}
    </>
  );
}
