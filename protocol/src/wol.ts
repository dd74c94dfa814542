/**
 * Wake-on-LAN devices (SPEC 3 "Wake-on-LAN device", SPEC 5 validation). SPEC does not show the
 * calls; ours are in docs/api.md, Wake-on-LAN.
 */

export interface WolDevice {
  name: string;
  /** Upper-case, colon-separated: AA:BB:CC:DD:EE:FF. */
  mac: string;
}

export const WOL_NAME_MAX = 64;
export const WOL_DEVICES_MAX = 100;

/** SPEC 5: six pairs of hex digits separated by colons. */
const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;

/** The MAC in its stored form, or null when it is not six colon-separated hex pairs. */
export function normalizeMac(mac: string): string | null {
  const trimmed = mac.trim();
  return MAC_RE.test(trimmed) ? trimmed.toUpperCase() : null;
}

/** A name as stored: trimmed; null when empty or too long. */
export function normalizeWolName(name: string): string | null {
  const trimmed = name.trim();
  return trimmed.length > 0 && trimmed.length <= WOL_NAME_MAX ? trimmed : null;
}

/** The magic packet: six 0xFF, then the MAC sixteen times (102 bytes). */
export function magicPacket(mac: string): Uint8Array {
  const normal = normalizeMac(mac);
  if (!normal) throw new Error(`not a MAC address: ${mac}`);
  const bytes = normal.split(':').map((h) => parseInt(h, 16));
  const packet = new Uint8Array(6 + 16 * 6);
  packet.fill(0xff, 0, 6);
  for (let i = 0; i < 16; i++) packet.set(bytes, 6 + i * 6);
  return packet;
}
