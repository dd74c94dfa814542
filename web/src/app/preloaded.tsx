import { lazy, useEffect, useState, type ComponentType, type ReactNode } from 'react';

/**
 * React.lazy for a chunk that may already be loaded or be on its way (app/prestart.ts preloads
 * the console's): once its module is in, the component renders directly; while a preload is
 * under way it renders `fallback` and re-renders when the module is in, without suspending.
 * A lazy component suspends on its first render even when the chunk came long before, and React
 * reveals a suspended boundary's content at most every 300 ms after its fallback showed: the
 * console's first commit waited 240-320 ms for that reveal after the chunks were in (issue 28
 * item 2). Not started (no preload) or failed: React.lazy as before (Suspense, error boundary).
 */
export function preloadedLazy<P extends object>(
  load: () => Promise<{ default: ComponentType<P> }>,
  fallback: ReactNode = null,
): { Component: ComponentType<P>; load: () => Promise<unknown> } {
  let loaded: ComponentType<P> | null = null;
  let pending: Promise<unknown> | null = null;
  const keep = () => {
    const loading = load().then((m) => {
      loaded = m.default;
      return m;
    });
    pending ??= loading;
    loading.catch(() => {
      if (pending === loading) pending = null;
    });
    return loading;
  };
  const Lazy = lazy(keep);
  // The lazy path's content never commits: its promise sets `loaded` before React retries.
  const Component = (props: P) => {
    const [, setIn] = useState(false);
    const waiting = loaded ? null : pending;
    useEffect(() => {
      if (!waiting) return;
      let live = true;
      // in, or failed (pending cleared): either way render again
      const again = () => live && setIn(true);
      waiting.then(again, again);
      return () => {
        live = false;
      };
    }, [waiting]);
    const Loaded = loaded;
    if (Loaded) return <Loaded {...props} />;
    return waiting ? fallback : <Lazy {...props} />;
  };
  return { Component, load: keep };
}
