// Data a page reads: loading, its problem, and a reload.
import { useCallback, useEffect, useState } from 'preact/hooks';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
  /** replaces the data from what it is now (live updates) */
  update: (change: (current: T) => T) => void;
}

export function useLoad<T>(read: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    read().then(
      (v) => live && (setData(v), setError(null), setLoading(false)),
      (e) => live && (setError(e), setLoading(false)),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const update = useCallback((change: (current: T) => T) => setData((d) => (d === undefined ? d : change(d))), []);
  return { data, error, loading, reload, update };
}
