// A secret the API returns only once (an API key, a signing secret, a client secret): shown with a
// copy button until the person says it is copied.
import type { ComponentChildren } from 'preact';
import { Copy } from './copy.tsx';

export function ShownOnce({ label, value, onDone, children }: { label: string; value: string; onDone: () => void; children: ComponentChildren }) {
  return (
    <div class="once" role="region" aria-label={label}>
      <p>{children} It is shown only now: copy it and keep it somewhere safe.</p>
      <p data-testid="shown-once"><Copy value={value} label={label} /></p>
      <button type="button" onClick={onDone}>I have copied it</button>
    </div>
  );
}
