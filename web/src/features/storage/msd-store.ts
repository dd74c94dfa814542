/**
 * Virtual media (mass storage, SPEC 2/3): the `msd` state of the device, fed by GET /api/msd and
 * the `msd` event (wire-protocol.md 1.6, 2.6), and the calls that change it. A plain store; the
 * storage panel only subscribes and calls these functions.
 */
import { create } from 'zustand';
import type { MsdMode } from '@kvm/protocol/enums';
import { deepMerge, isPlainObject } from '@kvm/protocol/merge';
import {
  isFullMsdState,
  isMountableImage,
  type MsdImageInfo,
  type MsdState,
  type MsdStatePartial,
} from '@kvm/protocol/msd';
import { api, NetworkError } from '../../lib/api';
import { eventSocket, heartbeat } from '../connection/connection';

export type { MsdImageInfo, MsdState };

/** An entry of the image list: the storage's entry plus its name. */
export interface MsdImage extends MsdImageInfo {
  name: string;
}

declare module '../../lib/event-socket' {
  interface EventPayloads {
    msd: MsdState | MsdStatePartial;
  }
}

export interface MsdStoreState {
  /** null until the first state arrives. */
  state: MsdState | null;
  /**
   * Set after set_enabled: the device restarts, the heartbeat loses and regains the connection,
   * and the reconnection clears it (SPEC 4 "either change reboots the device").
   */
  restarting: boolean;
}

export const useMsd = create<MsdStoreState>(() => ({ state: null, restarting: false }));

/**
 * Maps keyed by name are always sent whole when they change (kvmd compares them as a unit), so
 * they replace the old map: merging would keep images that were deleted.
 */
const REPLACED_WHOLE: ReadonlySet<string> = new Set(['storage.images', 'available_devices']);

/**
 * The next state after an `msd` event. The full state (it has `enabled` and `online`) comes
 * first and whenever `online` flips; later events carry only the changed keys among busy,
 * drive, drive_partition and storage.{images, parts, downloading, uploading} (wire-protocol.md
 * 2.6). Those are merged deeply, so a kvmd that sends part of `drive` loses nothing either.
 */
export function mergeMsdState(previous: MsdState | null, patch: unknown): MsdState | null {
  if (!isPlainObject(patch)) return previous;
  const base = isFullMsdState(patch as MsdStatePartial) || previous === null ? {} : previous;
  return deepMerge(base, patch, REPLACED_WHOLE) as MsdState;
}

export function applyMsd(patch: MsdState | MsdStatePartial | null | undefined): void {
  const previous = useMsd.getState().state;
  const next = mergeMsdState(previous, patch);
  if (next !== previous) useMsd.setState({ state: next });
}

/** SPEC 3: the image list is sorted newest first (then by name, for a stable order). */
export function imageList(state: MsdState | null): MsdImage[] {
  const images = state?.storage?.images ?? {};
  return Object.entries(images)
    .map(([name, info]) => ({ ...info, name }))
    .sort((a, b) => (b.mod_ts ?? 0) - (a.mod_ts ?? 0) || a.name.localeCompare(b.name));
}

/** SPEC 3/5: .iso, .img and .bin (any case) count as mountable images. */
export const isIsoName = isMountableImage;

/** SPEC 3: the ISO list keeps only names ending in .iso, .img or .bin. */
export function isoList(images: readonly MsdImage[]): MsdImage[] {
  return images.filter((image) => isIsoName(image.name));
}

/** Free bytes of the storage partition, or null when the device has not said. */
export function freeSpace(state: MsdState | null): number | null {
  const free = state?.storage?.parts?.['']?.free;
  return typeof free === 'number' ? free : null;
}

/** The mode the drive is in now (SPEC 3: flash is file sharing, CD-ROM is image mounting). */
export function driveMode(state: MsdState | null): MsdMode {
  return state?.drive?.cdrom === false ? 'flash' : 'cdrom';
}

export async function loadMsd(): Promise<MsdState | null> {
  try {
    const state = await api.get<MsdState>('/msd');
    // GET answers the full state: it replaces whatever the events built.
    useMsd.setState({ state: mergeMsdState(null, state) });
  } catch {
    // The event socket's burst carries the state too; the panel shows what it has.
  }
  return useMsd.getState().state;
}

export async function removeImage(name: string): Promise<void> {
  await api.post('/msd/remove', { query: { image: name } });
}

/**
 * Connects an image (SPEC 4: mounting needs a type and an image): the drive must be disconnected
 * to change its image, so set_params first, then set_connected. File sharing is a read-write
 * flash drive (SPEC 3); cdrom=true makes the server drop rw by itself.
 */
export async function mountImage(name: string, mode: MsdMode): Promise<void> {
  await api.post('/msd/set_params', {
    query: { image: name, cdrom: mode === 'cdrom', rw: mode === 'flash' ? true : undefined },
  });
  await api.post('/msd/set_connected', { query: { connected: true } });
}

export async function unmountImage(): Promise<void> {
  await api.post('/msd/set_connected', { query: { connected: false } });
}

/** The whole storage partition as a second USB drive (GL; these are GET routes). */
export async function setPartitionConnected(connected: boolean): Promise<void> {
  await api.get(connected ? '/msd/partition_connect' : '/msd/partition_disconnect');
}

export async function formatPartition(): Promise<void> {
  // Formatting a large card takes a while: no 30 s cut-off.
  await api.get('/msd/partition_format', { timeoutMs: null });
}

/** The longest wait for the device to come back before the panel reads the state again. */
export const RESTART_WAIT_MAX_MS = 180_000;
let restartGuard: ReturnType<typeof setTimeout> | undefined;

/**
 * Turns virtual media on or off. The device restarts afterwards (SPEC 4): the store says
 * `restarting` until the heartbeat has reconnected and the state has been read again. An answer
 * that never comes (the server went down first) counts as the restart having begun.
 */
export async function setMsdEnabled(enabled: boolean): Promise<void> {
  try {
    await api.post('/msd/set_enabled', { query: { enabled } });
  } catch (err) {
    if (!(err instanceof NetworkError && err.reason !== 'aborted')) throw err;
  }
  useMsd.setState({ restarting: true });
  // Should the connection never drop (a quick restart between two pings), stop waiting anyway.
  clearTimeout(restartGuard);
  restartGuard = setTimeout(() => void onReconnected(), RESTART_WAIT_MAX_MS);
}

async function onReconnected(): Promise<void> {
  clearTimeout(restartGuard);
  restartGuard = undefined;
  await loadMsd();
  useMsd.setState({ restarting: false });
}

eventSocket.on('msd', applyMsd);
heartbeat.onReconnected(() => void onReconnected());

/** For tests. */
export function resetMsdForTests(): void {
  clearTimeout(restartGuard);
  restartGuard = undefined;
  useMsd.setState({ state: null, restarting: false });
}

/** For tests: what the reconnection does. */
export const onMsdReconnectedForTests = onReconnected;
