/**
 * Keycap labels of a keymap (`GET /api/hid/keymap?name=`), fetched when the virtual keyboard
 * first shows that keymap and kept per name. A failed fetch is not kept: the keyboard falls
 * back to key names and the next showing tries again.
 */
import type { KeymapLayout } from '@kvm/protocol/hid/state';
import { api } from '../../lib/api';

/** undefined: not asked yet or on its way; null: the fetch failed. */
export type LayoutEntry = KeymapLayout | null | undefined;

export class KeymapLayoutCache {
  private readonly layouts = new Map<string, KeymapLayout | null>();
  private readonly pending = new Map<string, Promise<void>>();
  private readonly listeners = new Set<() => void>();
  private readonly fetchLayout: (name: string) => Promise<KeymapLayout>;

  constructor(fetchLayout: (name: string) => Promise<KeymapLayout>) {
    this.fetchLayout = fetchLayout;
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  peek(name: string): LayoutEntry {
    return this.layouts.get(name);
  }

  /** Fetches the layout unless it is known or on its way. */
  load(name: string): Promise<void> {
    const known = this.layouts.get(name);
    if (known) return Promise.resolve();
    const running = this.pending.get(name);
    if (running) return running;
    const loading = this.fetchLayout(name)
      .then(
        (layout) => this.set(name, layout),
        () => this.set(name, null),
      )
      .finally(() => this.pending.delete(name));
    this.pending.set(name, loading);
    return loading;
  }

  private set(name: string, layout: KeymapLayout | null): void {
    this.layouts.set(name, layout);
    for (const listener of [...this.listeners]) listener();
  }
}

export const keymapLayouts = new KeymapLayoutCache((name) =>
  api.get<KeymapLayout>('/hid/keymap', { query: { name } }),
);
