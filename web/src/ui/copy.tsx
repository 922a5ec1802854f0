// A value with a button copying it; the button says when it worked.
import { useState } from 'preact/hooks';

export function Copy({ value, label }: { value: string; label: string }) {
  return (
    <span class="copy">
      <code class="copy-value">{value}</code>
      <CopyButton value={value} label={label} />
    </span>
  );
}

/** The button alone, beside a value shown elsewhere (a link naming it). */
export function CopyButton({ value, label }: { value: string; label: string }) {
  const [done, setDone] = useState<string | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setDone('Copied');
    } catch {
      setDone('Copy failed: select the text and copy it');
    }
  };
  return (
    <>
      <button type="button" class="small" onClick={copy} aria-label={`Copy ${label}`}>Copy</button>
      <span role="status" class="copy-state">{done ?? ''}</span>
    </>
  );
}
