/**
 * The fingerbot, a Bluetooth button pusher (SPEC 2/3/5/7/9, wire-protocol.md 5.7): whether one
 * is there (the `fingerbot` event), the remembered press time, and the calls of its panel.
 */
import { create } from 'zustand';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import type { FingerbotStrength } from '@kvm/protocol/enums';
import {
  FINGERBOT_ANGLES,
  FINGERBOT_CLICK_BUFFER_MS,
  FINGERBOT_PRESS_S,
  FINGERBOT_UPGRADE_TIMEOUT_MS,
  type FingerbotEvent,
} from '@kvm/protocol/fingerbot';
import { api } from '../../lib/api';
import { readStorage, writeStorage } from '../../lib/storage';
import { eventSocket, heartbeat } from '../connection/connection';

declare module '../../lib/event-socket' {
  interface EventPayloads {
    fingerbot: FingerbotEvent;
  }
}

export interface FingerbotStoreState {
  /** null until the device has said. */
  exist: boolean | null;
}

export const useFingerbot = create<FingerbotStoreState>(() => ({ exist: null }));

export function applyFingerbot(event: FingerbotEvent | null | undefined): void {
  if (typeof event?.exist === 'boolean') useFingerbot.setState({ exist: event.exist });
}

/** GET /api/fingerbot/exist: for when the socket's first burst came before this module. */
export async function loadFingerbotExist(): Promise<boolean | null> {
  try {
    applyFingerbot(await api.get<FingerbotEvent>('/fingerbot/exist'));
  } catch {
    // The event says it too.
  }
  return useFingerbot.getState().exist;
}

eventSocket.on('fingerbot', applyFingerbot);
heartbeat.onReconnected(() => void loadFingerbotExist());

/** SPEC 5: press time is a number from 1 to 60 (seconds). */
export function isValidPressTime(seconds: unknown): seconds is number {
  return (
    typeof seconds === 'number' &&
    Number.isFinite(seconds) &&
    seconds >= FINGERBOT_PRESS_S.min &&
    seconds <= FINGERBOT_PRESS_S.max
  );
}

export const DEFAULT_PRESS_TIME_S = FINGERBOT_PRESS_S.min;

/** SPEC 3 local keys: the press time this browser used last. */
export function readPressTime(): number {
  const stored = Number(readStorage(STORAGE_KEYS.fingerbotPressTime));
  return isValidPressTime(stored) ? stored : DEFAULT_PRESS_TIME_S;
}

export function writePressTime(seconds: number): void {
  if (isValidPressTime(seconds)) writeStorage(STORAGE_KEYS.fingerbotPressTime, String(seconds));
}

/**
 * One press (GET, as GL has it). The press time goes in milliseconds; the call may take the
 * press time plus 8 s (SPEC 7/9).
 */
export async function pressFingerbot(seconds: number, strength: FingerbotStrength): Promise<void> {
  const pressMs = Math.round(seconds * 1000);
  await api.get('/fingerbot/click', {
    query: { press_time: pressMs, angle_enum: FINGERBOT_ANGLES[strength] },
    timeoutMs: FINGERBOT_CLICK_BUFFER_MS + pressMs,
  });
}

export async function fingerbotBattery(): Promise<number> {
  const { battery } = await api.get<{ battery: number }>('/fingerbot/battery');
  return battery;
}

export async function fingerbotVersion(): Promise<string> {
  const { version } = await api.get<{ version: string }>('/fingerbot/local_version');
  return version;
}

/** SPEC 9: pushing the firmware may take 480 s. */
export async function upgradeFingerbot(): Promise<void> {
  await api.post('/fingerbot/upgrade', { timeoutMs: FINGERBOT_UPGRADE_TIMEOUT_MS });
}

/** For tests. */
export function resetFingerbotForTests(): void {
  useFingerbot.setState({ exist: null });
}
