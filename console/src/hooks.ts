import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';

/** How often pages refresh what they show (the console polls; the API has no push channel). */
export const POLL_MS = 2500;

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

export function asApiError(err: unknown): ApiError {
  return err instanceof ApiError
    ? err
    : new ApiError({ title: 'Unexpected error', detail: String(err), status: 0 });
}

/**
 * Loads `fetcher()` now, whenever `deps` change, and every `every` ms while the tab is visible
 * (0: once). The last good data stays on screen while a refresh fails; the error shows beside it.
 */
export function useApi<T>(fetcher: () => Promise<T>, deps: unknown[], every = POLL_MS): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const fetcherRef = useRef(fetcher);
  fetcherRef.current = fetcher;
  const reload = useCallback(() => setTick((n) => n + 1), []);

  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const value = await fetcherRef.current();
        if (!live) return;
        setData(value);
        setError(undefined);
      } catch (err) {
        if (live) setError(asApiError(err));
      } finally {
        if (live) setLoading(false);
      }
      if (live && every > 0) timer = setTimeout(() => void wait(), every);
    };
    const wait = async () => {
      if (document.hidden) {
        timer = setTimeout(() => void wait(), every);
        return;
      }
      await run();
    };
    setLoading(true);
    void run();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [...deps, tick, every]);

  return { data, error, loading, reload };
}

/** Runs one operator action: busy while it runs, its problem kept for display. */
export function useAction(): {
  busy: boolean;
  error: ApiError | undefined;
  run: <T>(action: () => Promise<T>) => Promise<T | undefined>;
  clear: () => void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const run = useCallback(async <T>(action: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await action();
    } catch (err) {
      setError(asApiError(err));
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(undefined) };
}

/** Cursor pagination: the cursors of the pages before this one, so "Previous" works too. */
export function usePager(resetKey: unknown): {
  cursor: string | undefined;
  page: number;
  next: (cursor: string) => void;
  previous: () => void;
} {
  const [stack, setStack] = useState<(string | undefined)[]>([undefined]);
  useEffect(() => setStack([undefined]), [resetKey]);
  return {
    cursor: stack[stack.length - 1],
    page: stack.length,
    next: (cursor) => setStack((s) => [...s, cursor]),
    previous: () => setStack((s) => (s.length > 1 ? s.slice(0, -1) : s)),
  };
}
