// What the caller may do to a run, each behind a confirmation. One entry per action; deciding on a
// pending tool call is on the run's approval request itself (run-approvals.tsx).
import type { ComponentChildren } from 'preact';
import { agentParams, api, idempotencyKey, unwrap, type Schemas } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { navigate } from '../route.ts';
import { TERMINAL } from '../ui/status.tsx';
import { ConfirmButton } from '../ui/confirm.tsx';

type Run = Schemas['Run'];

export interface RunAction {
  key: string;
  /** shown only when the run is in a state for it and the caller holds what the API checks */
  offered(run: Run, me: Me): boolean;
  render(run: Run, changed: (run: Run) => void): ComponentChildren;
}

export const RUN_ACTIONS: RunAction[] = [
  {
    key: 'cancel',
    offered: (run, me) => !TERMINAL.has(run.status) && can(me, 'runs:cancel'),
    render: (run, changed) => (
      <ConfirmButton label="Cancel run" question={`Cancel run ${run.id}? Its sandbox is stopped and the run ends cancelled.`} danger
        onConfirm={async () => changed(await unwrap(api.POST('/api/runs/{id}/cancel', { params: { path: { id: run.id } }, body: {} })))} />
    ),
  },
  {
    key: 'rerun',
    offered: (run, me) => TERMINAL.has(run.status) && run.kind === 'agent' && can(me, 'agents:run'),
    render: (run) => (
      <ConfirmButton label="Rerun" question={`Launch ${run.packageId} again with the input of run ${run.id}?`}
        onConfirm={async () => {
          const next = await unwrap(api.POST('/api/agents/{scope}/{name}/run', {
            params: { path: agentParams(run.packageId), header: { 'Idempotency-Key': idempotencyKey() } },
            body: { rerun_from: run.id },
          }));
          navigate(['runs', next.id]);
        }} />
    ),
  },
  {
    key: 'resume',
    // the API answers no_checkpoint for a run that completed no step: the refusal is shown as it comes
    offered: (run, me) => (run.status === 'failed' || run.status === 'timeout') && can(me, 'agents:run'),
    render: (run) => (
      <ConfirmButton label="Resume" question={`Start a new run from the last checkpoint of run ${run.id}? Steps it completed are not made again.`}
        onConfirm={async () => {
          const next = await unwrap(api.POST('/api/runs/{id}/resume', {
            params: { path: { id: run.id }, header: { 'Idempotency-Key': idempotencyKey() } },
            body: {},
          }));
          navigate(['runs', next.id]);
        }} />
    ),
  },
];

export function RunActions({ run, me, changed }: { run: Run; me: Me; changed: (run: Run) => void }) {
  const offered = RUN_ACTIONS.filter((a) => a.offered(run, me));
  if (!offered.length) return null;
  return <div class="actions" role="group" aria-label="Run actions">{offered.map((a) => <span key={a.key}>{a.render(run, changed)}</span>)}</div>;
}
