// A run's approval requests: the tool call it waits on (the tool and its arguments, shown as text)
// with Approve and Reject, each behind a confirmation with an optional reason, offered only to a
// caller holding runs:approve while the run is running; and the requests already decided. The list
// is read again whenever the run's `awaiting` changes (the run page follows run_update live).
import { useState } from 'preact/hooks';
import { api, idempotencyKey, unwrap, type Schemas } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { ConfirmButton } from '../ui/confirm.tsx';
import { json, when } from '../ui/format.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';

type Run = Schemas['Run'];
type Approval = Schemas['Approval'];

export function RunApprovals({ run, me }: { run: Run; me: Me }) {
  const awaiting = run.awaiting?.approval_id ?? '';
  const list = useLoad(() => unwrap(api.GET('/api/runs/{id}/approvals', { params: { path: { id: run.id } } })), [run.id, awaiting, run.status]);
  const approvals = list.data?.data ?? [];
  if (list.error) return <><h2>Approvals</h2><ProblemView error={list.error} /></>;
  if (!approvals.length) return null;
  const decide = can(me, 'runs:approve') && run.status === 'running';
  const decided = (next: Approval) => list.update((l) => ({ ...l, data: l.data.map((a) => (a.id === next.id ? next : a)) }));
  const pending = approvals.filter((a) => a.status === 'pending');
  const past = approvals.filter((a) => a.status !== 'pending');
  return (
    <>
      <h2>Approvals</h2>
      {pending.map((a) => (
        <div key={a.id} class="card approval" role="region" aria-label={`Pending approval ${a.id}`} data-approval={a.id}>
          <p><strong>Waiting for approval</strong> since {when(a.requested_at)}: the agent asks to call <code data-testid="approval-tool">{a.tool}</code> with</p>
          <pre data-testid="approval-arguments">{json(a.arguments)}</pre>
          {decide ? (
            <div class="actions" role="group" aria-label="Decision">
              <Decision run={run} approval={a} decision="approve" decided={decided} />
              <Decision run={run} approval={a} decision="reject" decided={decided} />
            </div>
          ) : <p class="muted">{run.status === 'running' ? 'Your role here cannot decide on it.' : 'The run has ended.'}</p>}
        </div>
      ))}
      {past.length ? (
        <ul aria-label="Decided approvals">
          {past.map((a) => (
            <li key={a.id} data-approval={a.id}><code>{a.tool}</code>: <span class="state">{a.status}</span>{a.decided_at ? ` ${when(a.decided_at)}` : ''}{a.reason ? <> (reason: {a.reason})</> : null}</li>
          ))}
        </ul>
      ) : null}
    </>
  );
}

function Decision({ run, approval, decision, decided }: { run: Run; approval: Approval; decision: 'approve' | 'reject'; decided: (a: Approval) => void }) {
  const [reason, setReason] = useState('');
  const label = decision === 'approve' ? 'Approve' : 'Reject';
  const field = `reason-${decision}-${approval.id}`;
  return (
    <ConfirmButton label={label} danger={decision === 'reject'}
      question={decision === 'approve'
        ? `Let run ${run.id} call ${approval.tool} with the arguments shown?`
        : `Refuse run ${run.id} the call to ${approval.tool}? The agent is told it was refused, with your reason.`}
      onConfirm={async () => {
        const trimmed = reason.trim();
        decided(await unwrap(api.POST('/api/runs/{id}/approvals/{approval_id}', {
          params: { path: { id: run.id, approval_id: approval.id }, header: { 'Idempotency-Key': idempotencyKey() } },
          body: { decision, ...(trimmed ? { reason: trimmed } : {}) },
        })));
      }}>
      <div class="field">
        <label for={field}>Reason (optional)</label>
        <textarea id={field} rows={2} maxLength={2000} value={reason} onInput={(e) => setReason((e.target as HTMLTextAreaElement).value)} />
      </div>
    </ConfirmButton>
  );
}
