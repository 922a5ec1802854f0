// An action behind a confirmation: a native modal dialog (focus kept inside, Escape cancels).
import type { ComponentChildren } from 'preact';
import { useRef } from 'preact/hooks';
import { useAction } from './action.ts';
import { ProblemView } from './problem.tsx';

export function ConfirmButton(props: { label: string; question: string; confirmLabel?: string; danger?: boolean; onConfirm: () => Promise<unknown>; children?: ComponentChildren }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const { busy, error, run } = useAction();
  const confirm = () => run(async () => {
    await props.onConfirm();
    dialog.current?.close();
  });
  return (
    <>
      <button type="button" class={props.danger ? 'danger' : ''} onClick={() => dialog.current?.showModal()}>{props.label}</button>
      <dialog ref={dialog} aria-label={props.label}>
        <p>{props.question}</p>
        {props.children}
        {error ? <ProblemView error={error} /> : null}
        <div class="actions">
          <button type="button" class={props.danger ? 'danger' : 'primary'} disabled={busy} onClick={confirm}>{props.confirmLabel ?? props.label}</button>
          <button type="button" onClick={() => dialog.current?.close()}>Keep as is</button>
        </div>
      </dialog>
    </>
  );
}
