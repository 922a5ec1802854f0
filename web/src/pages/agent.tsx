// One agent: run it from a form made from its input.schema (after its readiness), its versions,
// dist-tags and draft, and its schedules.
import { useState } from 'preact/hooks';
import { agentParams, api, idempotencyKey, rawFetch, unwrap } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { navigate } from '../route.ts';
import { when } from '../ui/format.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { useAction } from '../ui/action.ts';
import { SchemaForm, type JsonSchema } from '../ui/schema-form.tsx';
import { Readiness } from './agent-readiness.tsx';
import { AgentSchedules } from './agent-schedules.tsx';
import { DistTags } from './agent-tags.tsx';

interface Manifest {
  display_name?: string;
  description?: string;
  input?: { schema?: JsonSchema };
}

/** The manifest of a version (or of the draft, with no version), as the package holds it. */
export async function readManifest(packageId: string, version: string | null): Promise<Manifest> {
  if (!version) return ((await unwrap(api.GET('/api/packages/{scope}/{name}/draft', { params: { path: agentParams(packageId) } }))).manifest ?? {}) as Manifest;
  const q = new URLSearchParams({ path: 'manifest.json', version });
  const { scope, name } = agentParams(packageId);
  const res = await rawFetch(`/api/packages/${encodeURIComponent(scope)}/${encodeURIComponent(name)}/files/content?${q}`);
  return JSON.parse(await res.text()) as Manifest;
}

export function AgentPage({ packageId, me }: { packageId: string; me: Me }) {
  const path = agentParams(packageId);
  const pkg = useLoad(() => unwrap(api.GET('/api/packages/{scope}/{name}', { params: { path } })), [packageId]);
  const [choice, setChoice] = useState<string>('latest');
  const version = choice === 'latest' ? pkg.data?.latest_version ?? null : choice === 'draft' ? null : choice;
  const manifest = useLoad(async () => (pkg.data ? readManifest(packageId, version) : undefined), [pkg.data, version]);
  const config = useLoad(() => unwrap(api.GET('/api/agents/{scope}/{name}/config', { params: { path } })), [packageId]);
  const launching = useAction();

  if (pkg.error) return <section><h1 tabIndex={-1}>Agent</h1><ProblemView error={pkg.error} /></section>;
  const p = pkg.data;
  if (!p) return <section><h1 tabIndex={-1}>Agent</h1><p>Loading…</p></section>;
  const schema: JsonSchema = manifest.data?.input?.schema ?? { type: 'object', properties: {} };
  const locked = (config.data?.locked_input ?? {}) as Record<string, unknown>;

  const launch = (input: Record<string, unknown>) => launching.run(async () => {
    const run = await unwrap(api.POST('/api/agents/{scope}/{name}/run', {
      params: { path, header: { 'Idempotency-Key': idempotencyKey() } },
      body: choice === 'draft' ? { input, source: 'draft' } : { input, ...(version ? { version } : {}) },
    }));
    navigate(['runs', run.id]);
  });

  return (
    <section>
      <h1 tabIndex={-1}>{p.display_name ?? p.packageId}</h1>
      <p><code>{p.packageId}</code>{p.description ? ` — ${p.description}` : ''}</p>
      {can(me, 'agents:run') ? (
        <section aria-labelledby="run-heading" class="card">
          <h2 id="run-heading">Run this agent</h2>
          <label for="run-version">Version</label>
          <select id="run-version" value={choice} onChange={(e) => setChoice(e.currentTarget.value)}>
            {p.latest_version ? <option value="latest">latest ({p.latest_version})</option> : null}
            {p.versions.map((v) => <option key={v.version} value={v.version}>{v.version}{v.yanked ? ' (yanked)' : ''}</option>)}
            {p.home_writable ? <option value="draft">the draft</option> : null}
          </select>
          <Readiness packageId={packageId} />
          {manifest.error ? <ProblemView error={manifest.error} /> : null}
          {manifest.data ? <SchemaForm key={`${choice}`} idPrefix="input" schema={schema} locked={locked} submitLabel="Launch run" busy={launching.busy} onSubmit={(input) => void launch(input)} /> : <p>Loading the input form…</p>}
          {launching.error ? <ProblemView error={launching.error} /> : null}
        </section>
      ) : null}
      <h2>Versions</h2>
      {p.versions.length ? (
        <table>
          <caption class="visually-hidden">Published versions</caption>
          <thead><tr><th scope="col">Version</th><th scope="col">Published</th><th scope="col">Integrity</th><th scope="col">State</th></tr></thead>
          <tbody>
            {p.versions.map((v) => <tr key={v.version}><td>{v.version}</td><td>{when(v.published_at)}</td><td><code class="wrap">{v.integrity}</code></td><td>{v.yanked ? 'yanked' : 'published'}</td></tr>)}
          </tbody>
        </table>
      ) : <p>No published version yet.</p>}
      <DistTags pkg={p} me={me} onChanged={pkg.reload} />
      <h2>Draft</h2>
      <p>{p.draft.base_version ? `Based on ${p.draft.base_version}` : 'Not based on a version'}; {p.draft.has_unarchived_changes ? 'it has changes not yet published' : 'no change since'}, last saved {when(p.draft.updatedAt)}.</p>
      {can(me, 'schedules:read') ? <AgentSchedules packageId={packageId} me={me} schema={schema} locked={locked} /> : null}
    </section>
  );
}
