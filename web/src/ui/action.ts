// A write a person starts (a form's submit, a button): whether it is under way and its problem.
import { useState } from 'preact/hooks';

export interface Action {
  busy: boolean;
  error: unknown;
  /** runs the write; a problem is kept for the page to show, never thrown */
  run: (write: () => Promise<unknown>) => Promise<void>;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (write: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await write();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}
