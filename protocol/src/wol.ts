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

/**
 * Whether a character may not be in a name: C0 controls (NUL, newlines, ESC…), DEL, C1
 * controls, the line and paragraph separators, and the bidirectional overrides and isolates
 * (they make a name show other than it reads, in the list, the log and the file).
 */
export function isForbiddenInWolName(codePoint: number): boolean {
  return (
    codePoint <= 0x1f ||
    (codePoint >= 0x7f && codePoint <= 0x9f) ||
    codePoint === 0x2028 ||
    codePoint === 0x2029 ||
    (codePoint >= 0x202a && codePoint <= 0x202e) ||
    (codePoint >= 0x2066 && codePoint <= 0x2069)
  );
}

/** Why a name cannot be stored, or null; checked on the trimmed name. */
export function wolNameProblem(name: string): 'empty' | 'long' | 'control' | null {
  const trimmed = name.trim();
  if (trimmed.length === 0) return 'empty';
  if (trimmed.length > WOL_NAME_MAX) return 'long';
  for (const char of trimmed) if (isForbiddenInWolName(char.codePointAt(0)!)) return 'control';
  return null;
}

/**
 * A name as stored: leading and trailing white space trimmed (SPEC 5 "name required" is about
 * what shows); null when empty, longer than WOL_NAME_MAX UTF-16 units (the console's
 * `maxLength` counts the same way) or holding a character of isForbiddenInWolName.
 */
export function normalizeWolName(name: string): string | null {
  return wolNameProblem(name) === null ? name.trim() : null;
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
