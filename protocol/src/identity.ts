/**
 * Device and USB identity (SPEC 3 "USB identity", "Device identity presets"; SPEC 5), shared by
 * the console's forms and the server. Every vendor and product id and name below is a real entry
 * of the usb.ids list Debian ships (`/usr/share/hwdata/usb.ids`): the manufacturer is the vendor
 * line's name, the product the device line's (a server test checks each against the file).
 */
import { USB_SERIAL_ANY, type DeviceIdentityPreset, type UsbIdentityField } from './system';

/** Linux Foundation 1d6b:0104 "Multifunction Composite Gadget": what a Linux gadget is. */
const DEFAULT_USB = {
  otg_manufacturer: 'Linux Foundation',
  otg_product: 'Multifunction Composite Gadget',
  otg_vendor_id: '0x1D6B',
  otg_product_id: '0x0104',
} as const;

const LOGITECH_RECEIVER = {
  otg_manufacturer: 'Logitech, Inc.',
  otg_product: 'Unifying Receiver',
  otg_vendor_id: '0x046D',
  otg_product_id: '0xC52B',
} as const;

const CHERRY_KEYBOARD = {
  otg_manufacturer: 'CHERRY',
  otg_product: 'MX BOARD 2.0S FL RGB Keyboard',
  otg_vendor_id: '0x046A',
  otg_product_id: '0x00C4',
} as const;

const HOLTEK_KEYBOARD = {
  otg_manufacturer: 'Holtek Semiconductor, Inc.',
  otg_product: 'Keyboard LKS02',
  otg_vendor_id: '0x04D9',
  otg_product_id: '0x1702',
} as const;

const MICROSOFT_KEYBOARD = {
  otg_manufacturer: 'Microsoft Corp.',
  otg_product: 'Wired Keyboard 600',
  otg_vendor_id: '0x045E',
  otg_product_id: '0x0750',
} as const;

/** The device identity preset a fresh device has. */
export const DEFAULT_IDENTITY_PRESET = 'default';
/** Not a preset: the fields are the user's own (what `identity_preset` says when none matches). */
export const CUSTOM_IDENTITY_PRESET = 'custom';

/**
 * SPEC 3's device identity presets: the USB identity plus the EDID preset (helper keys of
 * `GET /api/upgrade/edid_list`) that go together. `custom` is not in the list (it has no values).
 */
export const DEVICE_IDENTITY_PRESETS: readonly DeviceIdentityPreset[] = [
  { key: DEFAULT_IDENTITY_PRESET, label: 'Default', ...DEFAULT_USB, edid: 'E1920x1080' },
  {
    key: 'monitor_1080p_receiver',
    label: '1080P monitor, Logitech receiver',
    ...LOGITECH_RECEIVER,
    edid: 'E1920x1080',
  },
  {
    key: 'monitor_2k_cherry',
    label: '2K monitor, CHERRY keyboard',
    ...CHERRY_KEYBOARD,
    edid: 'E2560x1440',
  },
  {
    key: 'monitor_4k_holtek',
    label: '4K monitor, Holtek keyboard',
    ...HOLTEK_KEYBOARD,
    edid: 'E3840x2160',
  },
];

/**
 * SPEC 3's vendor presets: the USB identity alone (`edid: null` leaves the EDID alone): default
 * plus a receiver maker, two keyboard makers and a software vendor.
 */
export const USB_VENDOR_PRESETS: readonly DeviceIdentityPreset[] = [
  { key: 'default', label: 'Default (Linux Foundation)', ...DEFAULT_USB, edid: null },
  { key: 'logitech', label: 'Logitech', ...LOGITECH_RECEIVER, edid: null },
  { key: 'cherry', label: 'CHERRY', ...CHERRY_KEYBOARD, edid: null },
  { key: 'holtek', label: 'Holtek', ...HOLTEK_KEYBOARD, edid: null },
  { key: 'microsoft', label: 'Microsoft', ...MICROSOFT_KEYBOARD, edid: null },
];

export function deviceIdentityPreset(key: string): DeviceIdentityPreset | undefined {
  return DEVICE_IDENTITY_PRESETS.find((p) => p.key === key);
}

/** A USB string descriptor holds at most 126 UTF-16 units (255 bytes less the 2-byte header). */
export const USB_STRING_MAX = 126;

/** The USB identity as the forms and `set_param` carry it (ids as hex text). */
export type UsbIdentityText = Record<UsbIdentityField, string>;

/** `0x1234` or `1234` (1 to 4 hex digits) → the 16-bit number, or null. */
export function parseUsbId(text: string): number | null {
  const m = /^(?:0[xX])?([0-9a-fA-F]{1,4})$/.exec(text.trim());
  return m ? parseInt(m[1]!, 16) : null;
}

/** GL's `0x%04X`. */
export function formatUsbId(value: number): string {
  return `0x${value.toString(16).toUpperCase().padStart(4, '0')}`;
}

export type UsbIdentityErrorCode = 'required' | 'invalid_hex' | 'too_long' | 'invalid_chars';

export interface UsbIdentityError {
  field: UsbIdentityField;
  code: UsbIdentityErrorCode;
  /** English text (the server's 400 message); the console shows its own translation by code. */
  message: string;
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const SERIAL_CHARS = /^[0-9A-Za-z._-]*$/;
const USB_FIELDS: readonly UsbIdentityField[] = [
  'otg_manufacturer',
  'otg_product',
  'otg_vendor_id',
  'otg_product_id',
  'otg_serial',
];

/**
 * SPEC 5: the serial is optional, the other fields required; ids 16-bit hex; manufacturer and
 * product at most 126 printable ASCII characters; the serial at most 126 of `[0-9A-Za-z._-]`.
 * With `partial`, absent fields are not checked (`set_param` takes any subset). The first
 * problem, in form order, or null.
 */
export function validateUsbIdentity(
  fields: Partial<UsbIdentityText>,
  opts: { partial?: boolean } = {},
): UsbIdentityError | null {
  for (const field of USB_FIELDS) {
    const value = fields[field];
    if (value === undefined) {
      if (opts.partial || field === 'otg_serial') continue;
      return { field, code: 'required', message: `${field} parameter is required` };
    }
    const error = checkField(field, value);
    if (error) return error;
  }
  return null;
}

function checkField(field: UsbIdentityField, value: string): UsbIdentityError | null {
  if (field === 'otg_vendor_id' || field === 'otg_product_id') {
    if (value.trim() === '') {
      return { field, code: 'required', message: `${field} parameter cannot be empty` };
    }
    // GL's message for both ids.
    return parseUsbId(value) === null
      ? { field, code: 'invalid_hex', message: `${field} must be a valid hexadecimal value` }
      : null;
  }
  if (field !== 'otg_serial' && value.trim() === '') {
    return { field, code: 'required', message: `${field} parameter cannot be empty` };
  }
  if (value.length > USB_STRING_MAX) {
    return {
      field,
      code: 'too_long',
      message: `${field} must be at most ${USB_STRING_MAX} characters`,
    };
  }
  const allowed = field === 'otg_serial' ? SERIAL_CHARS : PRINTABLE_ASCII;
  if (!allowed.test(value)) {
    return {
      field,
      code: 'invalid_chars',
      message:
        field === 'otg_serial'
          ? `${field} may only contain letters, digits, '.', '_' and '-'`
          : `${field} may only contain printable ASCII characters`,
    };
  }
  return null;
}

/**
 * The device identity preset the USB fields equal (ids compared as numbers, names exactly), or
 * `custom`. A preset's serial is USB_SERIAL_ANY: any serial matches it.
 */
export function matchIdentityPreset(
  fields: Omit<UsbIdentityText, 'otg_serial'> & { otg_serial?: string },
  presets: readonly DeviceIdentityPreset[] = DEVICE_IDENTITY_PRESETS,
): string {
  const vid = parseUsbId(fields.otg_vendor_id);
  const pid = parseUsbId(fields.otg_product_id);
  const found = presets.find(
    (p) =>
      p.otg_manufacturer === fields.otg_manufacturer &&
      p.otg_product === fields.otg_product &&
      parseUsbId(p.otg_vendor_id) === vid &&
      parseUsbId(p.otg_product_id) === pid &&
      serialMatches(USB_SERIAL_ANY, fields.otg_serial ?? ''),
  );
  return found?.key ?? CUSTOM_IDENTITY_PRESET;
}

/** Whether serial `a` matches `b`: equal, or either is USB_SERIAL_ANY (SPEC 3). */
export function serialMatches(a: string, b: string): boolean {
  return a === b || a.toUpperCase() === USB_SERIAL_ANY || b.toUpperCase() === USB_SERIAL_ANY;
}
