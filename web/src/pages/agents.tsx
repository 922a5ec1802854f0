// The agents of the space, and importing a package: drop an .afps on the area (or choose it with
// the file picker, which the keyboard reaches).
import { useState } from 'preact/hooks';
import { api, rawFetch, unwrap, type Schemas } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { href } from '../route.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';

export function AgentsPage({ me }: { me: Me }) {
  const agents = useLoad(() => unwrap(api.GET('/api/packages', { params: { query: { type: 'agent', limit: 100 } } })), []);
  return (
    <section>
      <h1 tabIndex={-1}>Agents</h1>
      {can(me, 'agents:write') ? <ImportPackage onImported={agents.reload} /> : null}
      {agents.error ? <ProblemView error={agents.error} /> : null}
      {agents.data && !agents.data.data.length ? <p>No agent in this space yet.</p> : null}
      {agents.data?.data.length ? (
        <table>
          <caption class="visually-hidden">Agents of the space</caption>
          <thead><tr><th scope="col">Agent</th><th scope="col">Latest version</th><th scope="col">Dist-tags</th><th scope="col">Placement</th></tr></thead>
          <tbody>
            {agents.data.data.map((a) => (
              <tr key={a.packageId}>
                <td><a href={href(['agents', ...a.packageId.split('/')])}>{a.display_name ?? a.packageId}</a><div class="muted"><code>{a.packageId}</code></div>{a.description ? <div>{a.description}</div> : null}</td>
                <td>{a.latest_version ?? 'draft only'}</td>
                <td>{Object.entries(a.dist_tags as Record<string, string>).map(([t, v]) => `${t} → ${v}`).join(', ') || '—'}</td>
                <td>{a.placement}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

type Imported = Schemas['PublishedPackageVersion'];

function ImportPackage({ onImported }: { onImported: () => void }) {
  const [over, setOver] = useState(false);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<Imported | null>(null);
  const [error, setError] = useState<unknown>(null);

  const send = async (file: File | undefined) => {
    if (!file) return;
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      const form = new FormData();
      form.append('file', file, file.name);
      const res = await rawFetch('/api/packages/import', { method: 'POST', body: form });
      setDone((await res.json()) as Imported);
      onImported();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div
      class={`dropzone${over ? ' over' : ''}`}
      onDragOver={(e) => { e.preventDefault(); setOver(true); }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => { e.preventDefault(); setOver(false); void send(e.dataTransfer?.files[0]); }}
    >
      <p>Drop a package (<code>.afps</code>) here to import it, or</p>
      <label for="import-file">Choose a package file</label>
      <input id="import-file" type="file" accept=".afps,.zip,application/zip" disabled={busy} onChange={(e) => void send(e.currentTarget.files?.[0])} />
      <p role="status">{busy ? 'Importing…' : done ? `Imported ${done.packageId} ${done.version}.` : ''}</p>
      {error ? <ProblemView error={error} /> : null}
    </div>
  );
}
