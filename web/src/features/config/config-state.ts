/**
 * The server-stored settings as the console holds them (config-store.ts reads and writes
 * them). A module of its own without the shared schema: the video's start reads the store, and
 * the schema's library (zod, 87 KB) stays off the way to the first frame.
 */
import { create } from 'zustand';
import type { UserConfig } from '@kvm/protocol/settings';

export interface ConfigState {
  /** null until loaded. */
  config: UserConfig | null;
  status: 'idle' | 'loading' | 'ready' | 'error';
}

export const useConfig = create<ConfigState>(() => ({ config: null, status: 'idle' }));
