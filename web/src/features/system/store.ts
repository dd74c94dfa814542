import { useSyncExternalStore } from 'react';

/**
 * The smallest external store: state, a patch setter and listeners. The settings groups' logic
 * lives in subclasses (plain classes, testable without React); React only subscribes.
 */
export class Store<S extends object> {
  private state: S;
  private readonly listeners = new Set<() => void>();

  constructor(initial: S) {
    this.state = initial;
  }

  readonly getState = (): S => this.state;

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  protected setState(patch: Partial<S>): void {
    this.state = { ...this.state, ...patch };
    for (const listener of this.listeners) listener();
  }
}

export function useStore<S extends object>(store: Store<S>): S {
  return useSyncExternalStore(store.subscribe, store.getState);
}
