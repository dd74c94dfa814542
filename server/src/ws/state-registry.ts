/**
 * The registry of live-state providers behind `/api/ws`. Each subsystem registers once; the
 * socket asks every provider for a full snapshot when a client connects and broadcasts what
 * providers report afterwards. Adding a subsystem never touches the socket code.
 */

/** One event for the socket: `{event_type, event}`. */
export interface StateEvent {
  event_type: string;
  event: unknown;
}

export interface StateProvider {
  /** Name for logs. */
  readonly name: string;
  /** Full state as one or more events, for a client that just connected. */
  snapshot(): StateEvent[] | Promise<StateEvent[]>;
  /** Calls `emit` with every later change; returns the unsubscribe function. */
  subscribe(emit: (event: StateEvent) => void): () => void;
}

/** A service whose whole state is one event, re-sent on each of its `state` events. */
export interface WatchedState<T> {
  getState(): T;
  on(event: 'state', listener: (state: T) => void): unknown;
  off(event: 'state', listener: (state: T) => void): unknown;
}

/** The provider of a service whose state is one `event_type` (atx, fingerbot, hid). */
export function watchedStateProvider<T>(eventType: string, source: WatchedState<T>): StateProvider {
  return {
    name: eventType,
    snapshot: () => [{ event_type: eventType, event: source.getState() }],
    subscribe: (emit) => {
      const on = (state: T): void => emit({ event_type: eventType, event: state });
      source.on('state', on);
      return () => source.off('state', on);
    },
  };
}

export class StateRegistry {
  private readonly providers: StateProvider[] = [];
  private readonly listeners = new Set<(event: StateEvent) => void>();
  private readonly unsubscribers: Array<() => void> = [];

  register(provider: StateProvider): void {
    if (this.providers.some((p) => p.name === provider.name)) {
      throw new Error(`state provider '${provider.name}' registered twice`);
    }
    this.providers.push(provider);
    this.unsubscribers.push(provider.subscribe((event) => this.listeners.forEach((l) => l(event))));
  }

  /** Every provider's full state, in registration order. A failing provider is skipped. */
  async snapshot(onError: (name: string, err: unknown) => void): Promise<StateEvent[]> {
    const parts = await Promise.all(
      this.providers.map(async (p) => {
        try {
          return await p.snapshot();
        } catch (err) {
          onError(p.name, err);
          return [];
        }
      }),
    );
    return parts.flat();
  }

  /** Changes of every provider. */
  onChange(listener: (event: StateEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get names(): string[] {
    return this.providers.map((p) => p.name);
  }

  dispose(): void {
    this.unsubscribers.forEach((u) => u());
    this.listeners.clear();
  }
}
