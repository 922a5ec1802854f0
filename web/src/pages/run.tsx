// One run: its state following live (status, logs, cost), input, output or error, files, who
// launched it, its lineage, the actions the caller may take, and the tool calls it asks approval of.
import { useEffect, useState } from 'preact/hooks';
import { api, unwrap, type Answer, type Schemas } from '../api/client.ts';
import { subscribe } from '../api/live.ts';
import { can, type Me } from '../api/me.ts';
import { href } from '../route.ts';
import { Copy } from '../ui/copy.tsx';
import { cost, duration, json, when } from '../ui/format.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { RunStatus, TERMINAL } from '../ui/status.tsx';
import { Trigger } from '../ui/trigger.tsx';
import { RunActions } from './run-actions.tsx';
import { RunApprovals } from './run-approvals.tsx';

type Run = Schemas['Run'];
type Log = Answer<'/api/runs/{id}/logs', 'get'>['data'][number];

export function RunPage({ id, me }: { id: string; me: Me }) {
  const run = useLoad(() => unwrap(api.GET('/api/runs/{id}', { params: { path: { id } } })), [id]);
  const [logs, setLogs] = useState<Log[]>([]);
  const [logError, setLogError] = useState<unknown>(null);

  const readLogs = async () => {
    try {
      let since = 0;
      const all: Log[] = [];
      for (;;) {
        const page = await unwrap(api.GET('/api/runs/{id}/logs', { params: { path: { id }, query: { since, limit: 1000 } } }));
        all.push(...page.data);
        if (!page.hasMore) break;
        since = page.next_since;
      }
      setLogs((current) => merge(current, all));
    } catch (err) {
      setLogError(err);
    }
  };

  useEffect(() => {
    return subscribe(`/api/realtime/runs/${encodeURIComponent(id)}`, {
      onOpen: () => void readLogs(),
      run_update: (data) => run.update(() => data as unknown as Run),
      run_log: (entry) => setLogs((current) => merge(current, [{ sequence: entry.sequence, level: entry.level as Log['level'], message: entry.message, data: entry.data ?? null, createdAt: entry.createdAt }])),
      run_metric: (m) => run.update((r) => ({ ...r, cost: m.cost })),
    });
  }, [id]);

  if (run.error) return <section><h1 tabIndex={-1}>Run</h1><ProblemView error={run.error} /></section>;
  const r = run.data;
  if (!r) return <section><h1 tabIndex={-1}>Run</h1><p>Loading…</p></section>;
  return (
    <section>
      <h1 tabIndex={-1}>Run <Copy value={r.id} label="run id" /></h1>
      <dl class="facts">
        <dt>Status</dt><dd data-testid="run-status"><RunStatus status={r.status} /></dd>
        <dt>Agent</dt><dd><a href={href(['agents', ...r.packageId.split('/')])}>{r.packageId}</a> {r.agent_version}{r.source === 'draft' ? ' (draft)' : ''}</dd>
        <dt>Launched by</dt><dd><Trigger by={r.triggered_by} /></dd>
        <dt>Created</dt><dd>{when(r.createdAt)}</dd>
        <dt>Duration</dt><dd>{duration(r.duration_ms)}</dd>
        <dt>Cost</dt><dd>{cost(r.cost.usd)} ({r.cost.prompt_tokens} prompt tokens, {r.cost.completion_tokens} completion tokens)</dd>
        <dt>Lineage</dt><dd>{r.resumed_from ? <>resumed from <a href={href(['runs', r.resumed_from])}><code>{r.resumed_from}</code></a></>
          : r.rerun_of ? <>rerun of <a href={href(['runs', r.rerun_of])}><code>{r.rerun_of}</code></a></> : 'first launch'}</dd>
      </dl>
      <RunActions run={r} me={me} changed={(next) => run.update(() => next)} />
      <RunApprovals run={r} me={me} />
      {r.error ? (
        <div class="run-error" role="region" aria-label="Error">
          <h2>Error</h2>
          <p><code>{r.error.code}</code>: {r.error.message}</p>
          {r.error.details !== undefined ? <pre>{json(r.error.details)}</pre> : null}
        </div>
      ) : null}
      <h2>Output</h2>
      {r.result ? <pre data-testid="run-output">{json(r.result.output)}</pre> : <p>{TERMINAL.has(r.status) ? 'No output.' : 'No output yet.'}</p>}
      <h2>Input</h2>
      <pre>{json(r.input ?? {})}</pre>
      <h2>Logs</h2>
      {logError ? <ProblemView error={logError} /> : null}
      <ol class="logs" aria-live="polite">
        {logs.map((l) => <li key={l.sequence}><span class={`level level-${l.level}`}>{l.level}</span> <time>{when(l.createdAt)}</time> {l.message}</li>)}
      </ol>
      {can(me, 'files:read') ? <RunFiles id={r.id} /> : null}
    </section>
  );
}

function merge(current: Log[], more: Log[]): Log[] {
  const bySequence = new Map(current.map((l) => [l.sequence, l]));
  for (const l of more) bySequence.set(l.sequence, l);
  return [...bySequence.values()].sort((a, b) => a.sequence - b.sequence);
}

function RunFiles({ id }: { id: string }) {
  const files = useLoad(() => unwrap(api.GET('/api/runs/{id}/files', { params: { path: { id } } })), [id]);
  const open = async (fileId: string) => {
    const file = await unwrap(api.GET('/api/files/{id}', { params: { path: { id: fileId } } }));
    window.open(file.preview_url, '_blank', 'noopener');
  };
  return (
    <>
      <h2>Files</h2>
      {files.error ? <ProblemView error={files.error} /> : null}
      {files.data && !files.data.data.length ? <p>No files.</p> : null}
      <ul>
        {(files.data?.data ?? []).map((f) => (
          <li key={f.id}>{f.role}: {f.workspace_name} ({f.size} bytes) <button type="button" class="small" onClick={() => void open(f.id)}>Open {f.name}</button></li>
        ))}
      </ul>
    </>
  );
}
