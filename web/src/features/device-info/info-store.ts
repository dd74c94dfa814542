/**
 * The latest `info` fields from the event socket (docs/events.md: one frame per field system,
 * auth, meta, extras), with GET /api/info as the fallback for whoever needs a field first.
 */
import { create } from 'zustand';
import type { InfoEvent, InfoField, InfoResult } from '@kvm/protocol/events';
import { api } from '../../lib/api';

export type InfoState = Partial<InfoResult>;

export const useInfo = create<InfoState>(() => ({}));

/** Merges one `info` frame (or an /api/info answer): each field replaces the stored one. */
export function applyInfo(event: InfoEvent): void {
  if (typeof event !== 'object' || event === null) return;
  useInfo.setState((state) => ({ ...state, ...event }));
}

/** GET /api/info?fields=... and store the answer. */
export async function fetchInfo(fields: readonly InfoField[]): Promise<InfoState> {
  const result = await api.get<InfoEvent>('/info', { query: { fields: fields.join(',') } });
  applyInfo(result);
  return useInfo.getState();
}

/** SPEC 2 help/about: the firmware version. */
export function selectFirmwareVersion(state: InfoState): string | undefined {
  return state.system?.product?.version;
}
