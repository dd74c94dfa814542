/**
 * Wake-on-LAN devices (SPEC 2 "wake-on-LAN device list", SPEC 3, SPEC 5): the checks a form
 * makes before calling the server, the calls of docs/api.md, and the list they keep.
 */
import { create } from 'zustand';
import { WOL_DEVICES_MAX, WOL_NAME_MAX, type WolDevice } from '@kvm/protocol/wol';
import type { I18nKey } from '../../i18n/keys';
import { api } from '../../lib/api';

/**
 * SPEC 5: six pairs of hex digits separated by colons. Hyphens (Windows' `ipconfig /all`) and
 * no separator at all are taken too, and written the stored way: upper case with colons.
 */
const MAC_INPUT = /^[0-9a-f]{2}([:-]?)[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}$/i;

/** The MAC as stored (AA:BB:CC:DD:EE:FF), or null when it is not one. */
export function normalizeMacInput(text: string): string | null {
  const trimmed = text.trim();
  if (!MAC_INPUT.test(trimmed)) return null;
  const hex = trimmed.replace(/[:-]/g, '').toUpperCase();
  return hex.match(/.{2}/g)?.join(':') ?? null;
}

export type WolFieldError =
  | 'nameRequired'
  | 'nameTooLong'
  | 'macRequired'
  | 'macInvalid'
  | 'macDuplicate'
  | 'sameName'
  | 'tooMany';

export const WOL_ERROR_TEXT: Record<WolFieldError, I18nKey> = {
  nameRequired: 'wol.errors.nameRequired',
  nameTooLong: 'wol.errors.nameTooLong',
  macRequired: 'wol.errors.macRequired',
  macInvalid: 'wol.errors.macInvalid',
  macDuplicate: 'wol.errors.macDuplicate',
  sameName: 'wol.errors.sameName',
  tooMany: 'wol.errors.tooMany',
};

/** SPEC 5: a name is required (trimmed), and at most WOL_NAME_MAX characters. */
export function checkWolName(name: string): WolFieldError | null {
  const trimmed = name.trim();
  if (!trimmed) return 'nameRequired';
  if (trimmed.length > WOL_NAME_MAX) return 'nameTooLong';
  return null;
}

/** SPEC 5: the MAC must be valid and not in the list yet. */
export function checkWolMac(mac: string, devices: readonly WolDevice[]): WolFieldError | null {
  if (!mac.trim()) return 'macRequired';
  const normal = normalizeMacInput(mac);
  if (!normal) return 'macInvalid';
  if (devices.some((d) => d.mac.toUpperCase() === normal)) return 'macDuplicate';
  return null;
}

export interface NewWolDevice {
  name?: WolFieldError;
  mac?: WolFieldError;
}

/** Both fields of the add form; an empty object when the device may be added. */
export function checkNewDevice(
  name: string,
  mac: string,
  devices: readonly WolDevice[],
): NewWolDevice {
  const errors: NewWolDevice = {};
  const nameError = checkWolName(name);
  const macError = checkWolMac(mac, devices);
  if (nameError) errors.name = nameError;
  if (macError) errors.mac = macError;
  if (!nameError && !macError && devices.length >= WOL_DEVICES_MAX) errors.name = 'tooMany';
  return errors;
}

/** SPEC 5: a new name is required and must differ from the old one. */
export function checkRename(oldName: string, newName: string): WolFieldError | null {
  const error = checkWolName(newName);
  if (error) return error;
  return newName.trim() === oldName ? 'sameName' : null;
}

export interface WolStoreState {
  devices: WolDevice[];
  status: 'idle' | 'loading' | 'ready' | 'error';
}

export const useWol = create<WolStoreState>(() => ({ devices: [], status: 'idle' }));

export async function loadWolDevices(): Promise<WolDevice[]> {
  useWol.setState({ status: 'loading' });
  try {
    const { devices } = await api.get<{ devices: WolDevice[] }>('/wol/devices');
    useWol.setState({ devices, status: 'ready' });
    return devices;
  } catch (err) {
    useWol.setState({ status: 'error' });
    throw err;
  }
}

/** Adds a device; the caller has checked the fields (checkNewDevice). */
export async function addWolDevice(name: string, mac: string): Promise<WolDevice> {
  const normal = normalizeMacInput(mac) ?? mac.trim();
  const { device } = await api.post<{ device: WolDevice }>('/wol/add', {
    query: { name: name.trim(), mac: normal },
  });
  useWol.setState((s) => ({ devices: [...s.devices.filter((d) => d.mac !== device.mac), device] }));
  return device;
}

export async function renameWolDevice(mac: string, name: string): Promise<void> {
  const trimmed = name.trim();
  await api.post('/wol/rename', { query: { mac, name: trimmed } });
  useWol.setState((s) => ({
    devices: s.devices.map((d) => (d.mac === mac ? { ...d, name: trimmed } : d)),
  }));
}

export async function removeWolDevice(mac: string): Promise<void> {
  await api.post('/wol/remove', { query: { mac } });
  useWol.setState((s) => ({ devices: s.devices.filter((d) => d.mac !== mac) }));
}

/** Sends the magic packet; resolves with where it went. */
export async function wakeWolDevice(
  mac: string,
): Promise<{ mac: string; address: string; port: number }> {
  const { sent } = await api.post<{ sent: { mac: string; address: string; port: number } }>(
    '/wol/wake',
    { query: { mac } },
  );
  return sent;
}

/** For tests. */
export function resetWolForTests(): void {
  useWol.setState({ devices: [], status: 'idle' });
}
