/**
 * HID input frames (wire-protocol.md 2.8): the binary ops 1-5 the console sends on the data
 * channel and on `/api/ws`, and the JSON forms of the same events. Multi-byte integers are
 * big-endian. A frame that does not parse decodes to null and is dropped without a reply.
 *
 *   0x01 key       [op][flags][web name ASCII | u16 evdev when flags & 0x80]
 *   0x02 button    [op][flags][left|right|middle|up|down | u16 evdev when flags & 0x80]
 *   0x03 move      [op][x:i16][y:i16]                      exactly 5 bytes, -32768..32767
 *   0x04 relative  [op][flags][dx:i8][dy:i8]...            flags bit0 = squash
 *   0x05 wheel     [op][flags][dx:i8][dy:i8]...            positive dy scrolls up
 *   flags of 1/2: bit0 = pressed, bit1 = finish (key only)
 */
import { isMouseButton, keyByCode, keyByEvdev, mouseButtonByEvdev, type MouseButton } from './keys';

export const HID_OP = {
  key: 0x01,
  mouseButton: 0x02,
  mouseMove: 0x03,
  mouseRelative: 0x04,
  mouseWheel: 0x05,
} as const;

const FLAG_STATE = 0x01;
const FLAG_FINISH = 0x02;
const FLAG_SQUASH = 0x01;
const FLAG_EVDEV = 0x80;
/** kvmd reads at most this many bytes of a key name. */
const MAX_NAME_BYTES = 32;

export const ABS_MIN = -32768;
export const ABS_MAX = 32767;
export const DELTA_LIMIT = 127;
/**
 * The most deltas one relative or wheel event carries (ours; kvmd has no bound). The console
 * sends a few per frame; past this the rest of the event is ignored, so one 1 MiB frame cannot
 * turn into half a million reports (a wheel delta is up to 127 button presses on QEMU).
 */
export const HID_DELTAS_MAX = 512;

export interface Delta {
  x: number;
  y: number;
}

export type HidEvent =
  | { type: 'key'; key: string; state: boolean; finish: boolean }
  | { type: 'mouse_button'; button: MouseButton; state: boolean }
  | { type: 'mouse_move'; x: number; y: number }
  | { type: 'mouse_relative'; deltas: Delta[]; squash: boolean }
  | { type: 'mouse_wheel'; deltas: Delta[]; squash: boolean };

export function clampAbs(v: number): number {
  return Math.min(ABS_MAX, Math.max(ABS_MIN, Math.round(v)));
}

export function clampDelta(v: number): number {
  return Math.min(DELTA_LIMIT, Math.max(-DELTA_LIMIT, Math.round(v)));
}

// ---- encoding (the console) ----

function named(op: number, flags: number, name: string): Uint8Array {
  const frame = new Uint8Array(2 + name.length);
  frame[0] = op;
  frame[1] = flags;
  for (let i = 0; i < name.length; i++) frame[2 + i] = name.charCodeAt(i) & 0x7f;
  return frame;
}

export function encodeKey(key: string, state: boolean, finish = false): Uint8Array {
  return named(HID_OP.key, (state ? FLAG_STATE : 0) | (finish ? FLAG_FINISH : 0), key);
}

export function encodeMouseButton(button: MouseButton, state: boolean): Uint8Array {
  return named(HID_OP.mouseButton, state ? FLAG_STATE : 0, button);
}

export function encodeMouseMove(x: number, y: number): Uint8Array {
  const frame = new Uint8Array(5);
  const view = new DataView(frame.buffer);
  frame[0] = HID_OP.mouseMove;
  view.setInt16(1, clampAbs(x));
  view.setInt16(3, clampAbs(y));
  return frame;
}

function deltas(op: number, list: readonly Delta[], squash: boolean): Uint8Array {
  const frame = new Uint8Array(2 + list.length * 2);
  const view = new DataView(frame.buffer);
  frame[0] = op;
  frame[1] = squash ? FLAG_SQUASH : 0;
  list.forEach((d, i) => {
    view.setInt8(2 + i * 2, clampDelta(d.x));
    view.setInt8(3 + i * 2, clampDelta(d.y));
  });
  return frame;
}

export function encodeMouseRelative(list: readonly Delta[], squash: boolean): Uint8Array {
  return deltas(HID_OP.mouseRelative, list, squash);
}

export function encodeMouseWheel(list: readonly Delta[], squash: boolean): Uint8Array {
  return deltas(HID_OP.mouseWheel, list, squash);
}

/** The binary frame of any HID event. */
export function encodeHidEvent(event: HidEvent): Uint8Array {
  switch (event.type) {
    case 'key':
      return encodeKey(event.key, event.state, event.finish);
    case 'mouse_button':
      return encodeMouseButton(event.button, event.state);
    case 'mouse_move':
      return encodeMouseMove(event.x, event.y);
    case 'mouse_relative':
      return encodeMouseRelative(event.deltas, event.squash);
    case 'mouse_wheel':
      return encodeMouseWheel(event.deltas, event.squash);
  }
}

// ---- decoding (the device) ----

function readName(payload: Uint8Array): string | null {
  const bytes = payload.subarray(0, MAX_NAME_BYTES);
  let name = '';
  for (const b of bytes) {
    if (b < 0x20 || b > 0x7e) return null;
    name += String.fromCharCode(b);
  }
  return name;
}

function readEvdev(payload: Uint8Array): number | null {
  if (payload.length !== 2) return null;
  return (payload[0]! << 8) | payload[1]!;
}

function readDeltas(payload: Uint8Array): Delta[] | null {
  if (payload.length % 2 !== 0) return null;
  const list: Delta[] = [];
  const end = Math.min(payload.length, HID_DELTAS_MAX * 2);
  for (let i = 0; i < end; i += 2) {
    // i8 -128 has no opposite on the other side; clamp to the symmetric range.
    list.push({ x: clampDelta(signed8(payload[i]!)), y: clampDelta(signed8(payload[i + 1]!)) });
  }
  return list;
}

function signed8(b: number): number {
  return b >= 0x80 ? b - 0x100 : b;
}

/**
 * Decodes one binary frame, op byte included. Unknown keys and buttons, short or ragged frames
 * and unknown ops give null.
 */
export function decodeHidFrame(frame: Uint8Array): HidEvent | null {
  if (frame.length < 1) return null;
  const op = frame[0]!;
  switch (op) {
    case HID_OP.key: {
      if (frame.length < 3) return null;
      const flags = frame[1]!;
      const payload = frame.subarray(2);
      let key: string | undefined;
      if (flags & FLAG_EVDEV) {
        const code = readEvdev(payload);
        key = code === null ? undefined : keyByEvdev(code)?.code;
      } else {
        const name = readName(payload);
        key = name !== null && keyByCode(name) ? name : undefined;
      }
      if (!key) return null;
      return {
        type: 'key',
        key,
        state: (flags & FLAG_STATE) !== 0,
        finish: (flags & FLAG_FINISH) !== 0,
      };
    }
    case HID_OP.mouseButton: {
      if (frame.length < 3) return null;
      const flags = frame[1]!;
      const payload = frame.subarray(2);
      let button: MouseButton | undefined;
      if (flags & FLAG_EVDEV) {
        const code = readEvdev(payload);
        button = code === null ? undefined : mouseButtonByEvdev(code);
      } else {
        const name = readName(payload);
        button = name !== null && isMouseButton(name) ? name : undefined;
      }
      if (!button) return null;
      return { type: 'mouse_button', button, state: (flags & FLAG_STATE) !== 0 };
    }
    case HID_OP.mouseMove: {
      if (frame.length !== 5) return null;
      const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
      return { type: 'mouse_move', x: view.getInt16(1), y: view.getInt16(3) };
    }
    case HID_OP.mouseRelative:
    case HID_OP.mouseWheel: {
      if (frame.length < 2) return null;
      const list = readDeltas(frame.subarray(2));
      if (!list) return null;
      const squash = (frame[1]! & FLAG_SQUASH) !== 0;
      return op === HID_OP.mouseRelative
        ? { type: 'mouse_relative', deltas: list, squash }
        : { type: 'mouse_wheel', deltas: list, squash };
    }
    default:
      return null;
  }
}

// ---- JSON forms ----

function asBool(v: unknown, fallback?: boolean): boolean | null {
  if (v === undefined) return fallback ?? null;
  if (typeof v === 'boolean') return v;
  if (v === 1 || v === '1' || v === 'true') return true;
  if (v === 0 || v === '0' || v === 'false') return false;
  return null;
}

function asNumber(v: unknown): number | null {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
}

function asDelta(v: unknown): Delta | null {
  if (typeof v !== 'object' || v === null) return null;
  const x = asNumber((v as Record<string, unknown>).x);
  const y = asNumber((v as Record<string, unknown>).y);
  if (x === null || y === null) return null;
  return { x: clampDelta(x), y: clampDelta(y) };
}

function asDeltas(v: unknown): Delta[] | null {
  const items = Array.isArray(v) ? v.slice(0, HID_DELTAS_MAX) : [v];
  const list: Delta[] = [];
  for (const item of items) {
    const d = asDelta(item);
    if (!d) return null;
    list.push(d);
  }
  return list;
}

/**
 * Parses the JSON form of an event (`event_type` plus its `event` object). Values that do not
 * validate give null, like a bad binary frame.
 */
export function parseJsonHidEvent(type: string, event: Record<string, unknown>): HidEvent | null {
  switch (type) {
    case 'key': {
      const key = event.key;
      const state = asBool(event.state);
      const finish = asBool(event.finish, false);
      if (typeof key !== 'string' || !keyByCode(key) || state === null || finish === null) {
        return null;
      }
      return { type: 'key', key, state, finish };
    }
    case 'mouse_button': {
      const button = event.button;
      const state = asBool(event.state);
      if (typeof button !== 'string' || !isMouseButton(button) || state === null) return null;
      return { type: 'mouse_button', button, state };
    }
    case 'mouse_move': {
      const to = event.to as Record<string, unknown> | undefined;
      const x = asNumber(to?.x);
      const y = asNumber(to?.y);
      if (x === null || y === null) return null;
      return { type: 'mouse_move', x: clampAbs(x), y: clampAbs(y) };
    }
    case 'mouse_relative':
    case 'mouse_wheel': {
      const list = asDeltas(event.delta);
      const squash = asBool(event.squash, false);
      if (!list || squash === null) return null;
      return { type, deltas: list, squash };
    }
    default:
      return null;
  }
}

/** JSON event types that carry HID input. */
export const HID_JSON_TYPES = [
  'key',
  'mouse_button',
  'mouse_move',
  'mouse_relative',
  'mouse_wheel',
] as const;

/**
 * kvmd's squash: sums consecutive deltas while each axis stays within ±127, emitting a pair
 * when the next one would overflow, then the remainder.
 */
export function squashDeltas(list: readonly Delta[]): Delta[] {
  const out: Delta[] = [];
  let sx = 0;
  let sy = 0;
  let pending = false;
  for (const d of list) {
    const nx = sx + d.x;
    const ny = sy + d.y;
    if (pending && (Math.abs(nx) > DELTA_LIMIT || Math.abs(ny) > DELTA_LIMIT)) {
      out.push({ x: sx, y: sy });
      sx = d.x;
      sy = d.y;
    } else {
      sx = nx;
      sy = ny;
    }
    pending = true;
  }
  if (pending && (sx !== 0 || sy !== 0)) out.push({ x: sx, y: sy });
  return out;
}
