import { lazy, type ComponentType } from 'react';

/**
 * React.lazy for a chunk that may already be loaded (app/prestart.ts preloads the console's):
 * once its module is in, the component renders directly instead of suspending once more. A
 * lazy component suspends on its first render even when the chunk came long before, and React
 * reveals a boundary's content at most every 300 ms after a fallback showed: with three nested
 * chunks the first frame waited for those reveals (issue 28 item 2).
 */
export function preloadedLazy<P extends object>(
  load: () => Promise<{ default: ComponentType<P> }>,
): { Component: ComponentType<P>; load: () => Promise<unknown> } {
  let loaded: ComponentType<P> | null = null;
  const keep = () =>
    load().then((m) => {
      loaded = m.default;
      return m;
    });
  const Lazy = lazy(keep);
  // The lazy path's content never commits: its promise sets `loaded` before React retries.
  const Component = (props: P) => {
    const Loaded = loaded;
    return Loaded ? <Loaded {...props} /> : <Lazy {...props} />;
  };
  return { Component, load: keep };
}
