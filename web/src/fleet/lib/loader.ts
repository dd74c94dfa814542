/**
 * A value read from the fleet and read again on demand: a plain class React subscribes to
 * (useLoader). A reload that an older one overtakes is dropped; a failure goes to the status line.
 */
import { useEffect, useState, useSyncExternalStore } from 'react';
import { showError } from './session';

export class Loader<T> {
  private value: T;
  private seq = 0;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly fetcher: () => Promise<T>,
    initial: T,
  ) {
    this.value = initial;
  }

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  get = (): T => this.value;

  /** Reads again; resolves once the answer is shown (or the failure reported). */
  reload = async (): Promise<void> => {
    const n = ++this.seq;
    try {
      const value = await this.fetcher();
      if (n !== this.seq) return;
      this.value = value;
      for (const fn of this.listeners) fn();
    } catch (e) {
      if (n === this.seq) showError(e);
    }
  };
}

/**
 * The value of `fetcher`, read when the component mounts and whenever `key` changes, plus
 * `reload`. `pollMs` reads again that often while the tab is visible.
 */
export function useLoader<T>(
  fetcher: () => Promise<T>,
  initial: T,
  key = '',
  pollMs = 0,
): { data: T; reload: () => Promise<void> } {
  // one loader per key: the fetcher of the render that made it
  const [state, setState] = useState(() => ({ key, loader: new Loader(fetcher, initial) }));
  let loader = state.loader;
  if (state.key !== key) {
    loader = new Loader(fetcher, initial);
    setState({ key, loader });
  }
  useEffect(() => {
    void loader.reload();
    if (!pollMs) return;
    const timer = setInterval(() => {
      if (!document.hidden) void loader.reload();
    }, pollMs);
    return () => clearInterval(timer);
  }, [loader, pollMs]);
  const data = useSyncExternalStore(loader.subscribe, loader.get);
  return { data, reload: loader.reload };
}
