/**
 * The system-params routes' arguments (GL §5.3, 5.13; SPEC 3 "System params", "USB identity"):
 * the route parses and validates the whole raw query here (nothing is applied when one value is
 * wrong) and hands IdentityService a typed change. Messages are GL's and ours, unchanged.
 */
import {
  DEVICE_IDENTITY_PRESETS,
  deviceIdentityPreset,
  isPlainText,
  PLAIN_TEXT_PUNCTUATION,
  parseUsbId,
  validateUsbIdentity,
  type DeviceIdentityPreset,
  type OtgFunctions,
} from '@kvm/protocol';
import { BadRequestError } from '../../errors';

/** Bound of the free strings (msd_partition, *_vendor, mic_name): ours. */
export const PARAM_STRING_MAX = 126;
/** SCSI INQUIRY's vendor field is 8 bytes; longer names are cut by the gadget anyway. */
export const SCSI_VENDOR_MAX = 8;

/** The mouse outputs `absolute_mouse` chooses between. */
export const ABSOLUTE_OUTPUT = 'usb';
export const RELATIVE_OUTPUT = 'usb_rel';

/** The six OTG function flags, in the order GL lists them. */
export const OTG_FUNCTION_KEYS = [
  'enable_keyboard',
  'enable_mouse',
  'enable_mouse_alt',
  'start_cdrom',
  'start_flash',
  'enable_mic',
] as const satisfies readonly (keyof OtgFunctions)[];

/** Query values as the routes hand them over (strings, or arrays for repeated keys). */
export type RawQuery = Record<string, unknown>;

const STRING_KEYS = [
  'otg_manufacturer',
  'otg_product',
  'otg_serial',
  'msd_partition',
  'cdrom_vendor',
  'flash_vendor',
  'mic_name',
] as const;

/** What `set_param` asks to change; absent keys stay as they are. */
export type ParamsChange = Partial<
  Record<(typeof STRING_KEYS)[number], string> &
    Record<'otg_vendor_id' | 'otg_product_id', number> &
    Record<'privacy_enable' | 'privacy_restore' | 'enable_mic' | 'absolute_mouse', boolean>
>;

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);

function parseBool(value: unknown): boolean | null {
  if (typeof value !== 'string') return null;
  const v = value.trim().toLowerCase();
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  return null;
}

function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}...` : text);
}

/**
 * `set_param`'s query, validated whole. `mouseOutputs` are the HID's available outputs
 * (IdentityService.mouseOutputs): `absolute_mouse` may only pick one of them.
 */
export function parseParamsQuery(query: RawQuery, mouseOutputs: readonly string[]): ParamsChange {
  const change: ParamsChange = {};
  if (query['absolute_mouse'] !== undefined) {
    const absolute = parseBool(query['absolute_mouse']);
    if (absolute === null) {
      throw new BadRequestError(
        `absolute_mouse parameter validation failed: The argument 'absolute_mouse' (${shown(query['absolute_mouse'])}) is not a valid bool`,
      );
    }
    const wanted = absolute ? ABSOLUTE_OUTPUT : RELATIVE_OUTPUT;
    if (!mouseOutputs.includes(wanted)) {
      throw new BadRequestError(
        `absolute_mouse parameter validation failed: mouse output ${wanted} is not available here`,
      );
    }
    change.absolute_mouse = absolute;
  }
  for (const key of ['privacy_enable', 'privacy_restore', 'enable_mic'] as const) {
    if (query[key] === undefined) continue;
    const value = parseBool(query[key]);
    if (value === null) {
      throw new BadRequestError(`${key} parameter must be a boolean, got ${shown(query[key])}`);
    }
    change[key] = value;
  }
  for (const key of ['otg_vendor_id', 'otg_product_id'] as const) {
    const raw = query[key];
    if (raw === undefined) continue;
    const id = typeof raw === 'string' ? parseUsbId(raw) : null;
    if (id === null) throw new BadRequestError(`${key} must be a valid hexadecimal value`);
    change[key] = id;
  }
  for (const key of STRING_KEYS) {
    const raw = query[key];
    if (raw === undefined) continue;
    if (typeof raw !== 'string') {
      throw new BadRequestError(`${key} parameter must be given once`);
    }
    if (key === 'otg_manufacturer' || key === 'otg_product' || key === 'otg_serial') {
      const problem = validateUsbIdentity({ [key]: raw }, { partial: true });
      if (problem) throw new BadRequestError(problem.message);
    } else {
      if (raw.trim() === '') throw new BadRequestError(`${key} parameter cannot be empty`);
      const max = key.endsWith('_vendor') ? SCSI_VENDOR_MAX : PARAM_STRING_MAX;
      if (raw.length > max) {
        throw new BadRequestError(`${key} parameter must be at most ${max} characters`);
      }
      // msd_partition is a path; the names reach the USB gadget (SPEC 5's text pattern).
      const ok = key === 'msd_partition' ? /^[\x20-\x7e]*$/.test(raw) : isPlainText(raw);
      if (!ok) {
        throw new BadRequestError(
          key === 'msd_partition'
            ? `${key} parameter may only contain printable ASCII`
            : `${key} parameter may only contain ASCII letters, digits, spaces and ${PLAIN_TEXT_PUNCTUATION}`,
        );
      }
    }
    change[key] = raw;
  }
  return change;
}

/** `otg_functions`' query: any of the six booleans; absent ones stay as they are. */
export function parseOtgFunctions(query: RawQuery): Partial<OtgFunctions> {
  const change: Partial<OtgFunctions> = {};
  for (const key of OTG_FUNCTION_KEYS) {
    const raw = query[key];
    if (raw === undefined) continue;
    const value = parseBool(raw);
    if (value === null) {
      throw new BadRequestError(`${key} parameter must be a boolean, got ${shown(raw)}`);
    }
    change[key] = value;
  }
  return change;
}

/** `set_identity_preset`'s `preset`: one of the device identity presets by key. */
export function parseIdentityPreset(key: unknown): DeviceIdentityPreset {
  const preset = typeof key === 'string' ? deviceIdentityPreset(key) : undefined;
  if (!preset) {
    throw new BadRequestError(
      `preset parameter must be one of ${DEVICE_IDENTITY_PRESETS.map((p) => p.key).join(', ')}`,
    );
  }
  return preset;
}
