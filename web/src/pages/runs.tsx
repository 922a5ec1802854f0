// The space's runs, newest first, filtered by status and agent, kept current by the realtime
// stream: a run launched elsewhere appears and changes status without a reload.
import { useEffect, useState } from 'preact/hooks';
import { agentParams, api, unwrap, type Schemas } from '../api/client.ts';
import { subscribe } from '../api/live.ts';
import type { Me } from '../api/me.ts';
import { href, navigate } from '../route.ts';
import { CopyButton } from '../ui/copy.tsx';
import { cost, duration, when } from '../ui/format.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { RunStatus } from '../ui/status.tsx';
import { Trigger } from '../ui/trigger.tsx';

type Run = Schemas['Run'];
const STATUSES = ['pending', 'running', 'success', 'failed', 'timeout', 'cancelled'] as const;
type Status = (typeof STATUSES)[number];
const PAGE = 20;

export function RunsPage({ query }: { me: Me; query: URLSearchParams }) {
  const status = (STATUSES as readonly string[]).includes(query.get('status') ?? '') ? (query.get('status') as Status) : undefined;
  const agent = query.get('agent') ?? '';
  const offset = Math.max(0, Number(query.get('offset') ?? 0) || 0);
  const [live, setLive] = useState<'live' | 'reconnecting'>('reconnecting');

  const agents = useLoad(() => unwrap(api.GET('/api/packages', { params: { query: { type: 'agent', limit: 100 } } })), []);
  const runs = useLoad(async () => {
    if (agent) {
      const page = await unwrap(api.GET('/api/agents/{scope}/{name}/runs', { params: { path: agentParams(agent), query: { limit: PAGE, offset } } }));
      return { ...page, data: status ? page.data.filter((r) => r.status === status) : page.data };
    }
    return unwrap(api.GET('/api/runs', { params: { query: { limit: PAGE, offset, status } } }));
  }, [status, agent, offset]);

  useEffect(() => {
    const path = agent ? `/api/realtime/agents/${encodeURIComponent(agent)}/runs` : '/api/realtime/runs';
    return subscribe(path, {
      onState: setLive,
      // no replay: once the stream is open (first or again) the page is read, so nothing falls between
      onOpen: () => runs.reload(),
      run_update: (data) => {
        const run = data as unknown as Run;
        runs.update((page) => {
          const known = page.data.some((r) => r.id === run.id);
          const fits = !status || run.status === status;
          let list = page.data.map((r) => (r.id === run.id ? run : r));
          if (!known && fits && offset === 0) list = [run, ...list].slice(0, PAGE);
          if (known && !fits) list = list.filter((r) => r.id !== run.id);
          return { ...page, data: list };
        });
      },
    }, { channels: 'run_update' });
  }, [status, agent, offset]);

  const filter = (next: Record<string, string | undefined>) => navigate(['runs'], { status, agent: agent || undefined, ...next });

  return (
    <section>
      <h1 tabIndex={-1}>Runs</h1>
      <p class="live-state" role="status">{live === 'live' ? 'Live: updates as runs change' : 'Connecting to live updates…'}</p>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label for="status-filter">Status</label>
        <select id="status-filter" value={status ?? ''} onChange={(e) => filter({ status: e.currentTarget.value || undefined, offset: undefined })}>
          <option value="">any</option>
          {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
        </select>
        <label for="agent-filter">Agent</label>
        <select id="agent-filter" value={agent} onChange={(e) => filter({ agent: e.currentTarget.value || undefined, offset: undefined })}>
          <option value="">any</option>
          {(agents.data?.data ?? []).map((a) => <option key={a.packageId} value={a.packageId}>{a.display_name ?? a.packageId}</option>)}
        </select>
      </form>
      {runs.error ? <ProblemView error={runs.error} /> : null}
      {runs.data ? <RunTable runs={runs.data.data} /> : <p>Loading…</p>}
      <div class="pager">
        {offset > 0 ? <a href={href(['runs'], { status, agent: agent || undefined, offset: String(Math.max(0, offset - PAGE)) })}>Newer runs</a> : null}
        {runs.data?.hasMore ? <a href={href(['runs'], { status, agent: agent || undefined, offset: String(offset + PAGE) })}>Older runs</a> : null}
      </div>
    </section>
  );
}

export function RunTable({ runs }: { runs: Run[] }) {
  if (!runs.length) return <p>No runs here yet.</p>;
  return (
    <table class="runs">
      <caption class="visually-hidden">Runs, newest first</caption>
      <thead>
        <tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Agent</th><th scope="col">Trigger</th><th scope="col">Created</th><th scope="col">Duration</th><th scope="col">Cost</th></tr>
      </thead>
      <tbody>
        {runs.map((r) => (
          <tr key={r.id} data-run={r.id}>
            <td><span class="copy"><a href={href(['runs', r.id])}><code class="copy-value">{r.id}</code></a> <CopyButton value={r.id} label={`run id ${r.id}`} /></span></td>
            <td><RunStatus status={r.status} /></td>
            <td>{r.packageId}{r.agent_version ? <span class="muted"> {r.agent_version}</span> : null}</td>
            <td>{r.triggered_by ? <Trigger by={r.triggered_by} /> : '—'}</td>
            <td>{when(r.createdAt)}</td>
            <td>{duration(r.duration_ms)}</td>
            <td>{r.cost ? cost(r.cost.usd) : '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
