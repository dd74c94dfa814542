/**
 * System params (GL §5.3, 5.13; SPEC 3 "System params", "USB identity"): the USB identity the
 * remote computer sees, the virtual media vendor strings, the microphone name, privacy flags and
 * the OTG functions. Stored in `<data_dir>/system/params.json` (atomic); `absolute_mouse` is the
 * HID service's mouse output and `msd_type` the virtual media's mode, both read live.
 *
 * Every request is validated whole before anything is applied. A USB identity change goes to the
 * driver (re-enumeration); if the driver fails, the stored params are put back and the error is
 * the answer. Applies run one at a time; a few wait, more answer 409.
 */
import { join } from 'node:path';
import {
  DEFAULT_IDENTITY_PRESET,
  DEVICE_IDENTITY_PRESETS,
  deviceIdentityPreset,
  formatUsbId,
  isPlainText,
  matchIdentityPreset,
  PLAIN_TEXT_PUNCTUATION,
  parseUsbId,
  validateUsbIdentity,
  type DeviceIdentityPreset,
  type HidState,
  type MsdState,
  type OtgFunctions,
  type SystemParams,
  type UsbIdentityField,
} from '@kvm/protocol';
import { ApiError, BadRequestError, InternalError, IsBusyError } from '../../errors';
import { SILENT_LOGGER, type Logger } from '../../log';
import { JsonFile } from '../../storage/json-store';
import type { UsbIdentity, UsbIdentityDriver } from '../../drivers/system/types';

/** GL's default ids: here the Linux Foundation composite gadget (the `default` preset). */
const DEFAULT_PRESET = deviceIdentityPreset(DEFAULT_IDENTITY_PRESET)!;
export const DEFAULT_VENDOR_ID = parseUsbId(DEFAULT_PRESET.otg_vendor_id)!;
export const DEFAULT_PRODUCT_ID = parseUsbId(DEFAULT_PRESET.otg_product_id)!;

/** Bound of the free strings (msd_partition, *_vendor, mic_name): ours. */
export const PARAM_STRING_MAX = 126;
/** SCSI INQUIRY's vendor field is 8 bytes; longer names are cut by the gadget anyway. */
export const SCSI_VENDOR_MAX = 8;
/** Applies waiting behind the running one; past this a request answers 409. */
export const PARAMS_QUEUE_MAX = 4;

/** 409: too many parameter changes at once (one runs, a few wait). */
export class SystemParamsBusyError extends IsBusyError {
  static override readonly defaultMessage = 'Another system parameter change is in progress';
}

/** 500: the USB devices could not be re-enumerated (the previous identity stays). */
export class UsbIdentityApplyError extends InternalError {}

async function applyUsb(usb: UsbIdentityDriver, identity: UsbIdentity): Promise<void> {
  try {
    await usb.apply(identity);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new UsbIdentityApplyError(`USB identity not applied: ${(err as Error).message}`);
  }
}

export interface StoredParams {
  otg_manufacturer: string;
  otg_product: string;
  otg_vendor_id: number;
  otg_product_id: number;
  otg_serial: string;
  msd_partition: string;
  cdrom_vendor: string;
  flash_vendor: string;
  mic_name: string;
  privacy_enable: boolean;
  privacy_restore: boolean;
  otg_functions: OtgFunctions;
}

export const DEFAULT_OTG_FUNCTIONS: OtgFunctions = {
  enable_keyboard: true,
  enable_mouse: true,
  enable_mouse_alt: false,
  start_cdrom: true,
  start_flash: false,
  enable_mic: false,
};

export function defaultParams(msdPartition: string): StoredParams {
  return {
    otg_manufacturer: DEFAULT_PRESET.otg_manufacturer,
    otg_product: DEFAULT_PRESET.otg_product,
    otg_vendor_id: DEFAULT_VENDOR_ID,
    otg_product_id: DEFAULT_PRODUCT_ID,
    otg_serial: '',
    msd_partition: msdPartition,
    // what Linux's mass storage gadget answers in INQUIRY by default
    cdrom_vendor: 'Linux',
    flash_vendor: 'Linux',
    mic_name: 'USB Microphone',
    privacy_enable: false,
    privacy_restore: false,
    otg_functions: { ...DEFAULT_OTG_FUNCTIONS },
  };
}

/** A stored file is read field by field: a bad field falls back to its default. */
function parseStored(raw: unknown, defaults: StoredParams): StoredParams {
  const r = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const text = (k: keyof StoredParams, ok: (v: string) => boolean = () => true): string => {
    const v = r[k];
    return typeof v === 'string' && ok(v) ? v : (defaults[k] as string);
  };
  const id = (k: 'otg_vendor_id' | 'otg_product_id'): number => {
    const v = r[k];
    return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffff ? v : defaults[k];
  };
  const flag = (v: unknown, d: boolean): boolean => (typeof v === 'boolean' ? v : d);
  const usbOk =
    (field: UsbIdentityField) =>
    (v: string): boolean =>
      validateUsbIdentity({ [field]: v }, { partial: true }) === null;
  const f = (r['otg_functions'] ?? {}) as Record<string, unknown>;
  const functions = {} as OtgFunctions;
  for (const key of Object.keys(DEFAULT_OTG_FUNCTIONS) as (keyof OtgFunctions)[]) {
    functions[key] = flag(f[key], DEFAULT_OTG_FUNCTIONS[key]);
  }
  const bounded = (v: string): boolean => v !== '' && v.length <= PARAM_STRING_MAX;
  return {
    otg_manufacturer: text('otg_manufacturer', usbOk('otg_manufacturer')),
    otg_product: text('otg_product', usbOk('otg_product')),
    otg_vendor_id: id('otg_vendor_id'),
    otg_product_id: id('otg_product_id'),
    otg_serial: text('otg_serial', usbOk('otg_serial')),
    msd_partition: text('msd_partition', bounded),
    cdrom_vendor: text('cdrom_vendor', (v) => bounded(v) && isPlainText(v)),
    flash_vendor: text('flash_vendor', (v) => bounded(v) && isPlainText(v)),
    mic_name: text('mic_name', (v) => bounded(v) && isPlainText(v)),
    privacy_enable: flag(r['privacy_enable'], defaults.privacy_enable),
    privacy_restore: flag(r['privacy_restore'], defaults.privacy_restore),
    otg_functions: functions,
  };
}

/** What the service needs of the HID service: the mouse output. */
export interface MouseOutputs {
  getState(): Pick<HidState, 'mouse'>;
  setParams(params: { mouseOutput?: string }): Promise<void>;
}

export interface IdentityServiceOptions {
  dataDir: string;
  usb: UsbIdentityDriver;
  hid: MouseOutputs;
  msd: { getState(): Pick<MsdState, 'enabled' | 'drive'> };
  /** `msd_partition`'s value on a fresh device (the virtual media storage folder). */
  defaultMsdPartition: string;
  log?: Logger;
}

/** Query values as the routes hand them over (strings, or arrays for repeated keys). */
export type RawQuery = Record<string, unknown>;

const ABSOLUTE_OUTPUT = 'usb';
const RELATIVE_OUTPUT = 'usb_rel';

const STRING_KEYS = [
  'otg_manufacturer',
  'otg_product',
  'otg_serial',
  'msd_partition',
  'cdrom_vendor',
  'flash_vendor',
  'mic_name',
] as const;
/** Keys whose change re-enumerates the USB devices (GL: restarts the gadget). */
const USB_KEYS = new Set<keyof StoredParams>([
  'otg_manufacturer',
  'otg_product',
  'otg_vendor_id',
  'otg_product_id',
  'otg_serial',
  'cdrom_vendor',
  'flash_vendor',
]);

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

export class IdentityService {
  private queue: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  private constructor(
    private params: StoredParams,
    private readonly file: JsonFile<StoredParams>,
    private readonly opts: IdentityServiceOptions,
  ) {}

  static async open(opts: IdentityServiceOptions): Promise<IdentityService> {
    const log = opts.log ?? SILENT_LOGGER;
    const defaults = defaultParams(opts.defaultMsdPartition);
    const file = new JsonFile(
      join(opts.dataDir, 'system', 'params.json'),
      (raw) => parseStored(raw, defaults),
      { maxBytes: 64 * 1024 },
    );
    const params = await file.loadOrDefaults(() => defaults, log, 'system params');
    const service = new IdentityService(params, file, opts);
    return service;
  }

  /** Hands the stored identity to the driver (at start; the driver re-applies after restarts). */
  async start(): Promise<void> {
    try {
      await this.opts.usb.apply(this.usbIdentity(this.params));
    } catch (err) {
      this.opts.log?.warn({ err: (err as Error).message }, 'usb identity: not applied at start');
    }
  }

  stored(): StoredParams {
    return structuredClone(this.params);
  }

  /** `GET /api/system/get_param`. */
  get(): SystemParams {
    const p = this.params;
    const mouse = this.opts.hid.getState().mouse;
    const msd = this.opts.msd.getState();
    const text = {
      otg_manufacturer: p.otg_manufacturer,
      otg_product: p.otg_product,
      otg_vendor_id: formatUsbId(p.otg_vendor_id),
      otg_product_id: formatUsbId(p.otg_product_id),
      otg_serial: p.otg_serial,
    };
    return {
      success: true,
      absolute_mouse: mouse.absolute,
      msd_partition: p.msd_partition,
      ...text,
      cdrom_vendor: p.cdrom_vendor,
      flash_vendor: p.flash_vendor,
      mic_name: p.mic_name,
      default_product_id: formatUsbId(DEFAULT_PRODUCT_ID),
      default_vendor_id: formatUsbId(DEFAULT_VENDOR_ID),
      privacy_enable: p.privacy_enable,
      privacy_restore: p.privacy_restore,
      msd_type: !msd.enabled ? 'disabled' : msd.drive.cdrom ? 'cdrom' : 'flash',
      enable_mic: p.otg_functions.enable_mic,
      identity_preset: matchIdentityPreset(text),
      usb_applies: [...this.opts.usb.applies],
    };
  }

  /** `POST /api/system/set_param`: the answer omits the defaults (GL). */
  async set(
    query: RawQuery,
  ): Promise<Omit<SystemParams, 'default_product_id' | 'default_vendor_id'>> {
    const { next, absolute } = this.parse(query);
    await this.exclusive(async () => {
      await this.commit(next);
      if (absolute !== null) {
        await this.opts.hid.setParams({
          mouseOutput: absolute ? ABSOLUTE_OUTPUT : RELATIVE_OUTPUT,
        });
      }
    });
    const { default_product_id: _p, default_vendor_id: _v, ...rest } = this.get();
    return rest;
  }

  /** Ours: applies a device identity preset's USB fields; the console then posts its EDID. */
  async setIdentityPreset(
    key: unknown,
  ): Promise<{ success: true; preset: DeviceIdentityPreset; params: SystemParams }> {
    const preset = typeof key === 'string' ? deviceIdentityPreset(key) : undefined;
    if (!preset) {
      throw new BadRequestError(
        `preset parameter must be one of ${DEVICE_IDENTITY_PRESETS.map((p) => p.key).join(', ')}`,
      );
    }
    await this.exclusive(() =>
      this.commit({
        ...this.params,
        otg_manufacturer: preset.otg_manufacturer,
        otg_product: preset.otg_product,
        otg_vendor_id: parseUsbId(preset.otg_vendor_id)!,
        otg_product_id: parseUsbId(preset.otg_product_id)!,
      }),
    );
    return { success: true, preset: { ...preset }, params: this.get() };
  }

  otgFunctions(): OtgFunctions {
    return { ...this.params.otg_functions };
  }

  /** `POST /api/system/otg_functions`: any of the six booleans; stored (see docs/system.md). */
  async setOtgFunctions(query: RawQuery): Promise<OtgFunctions> {
    const functions = { ...this.params.otg_functions };
    for (const key of Object.keys(DEFAULT_OTG_FUNCTIONS) as (keyof OtgFunctions)[]) {
      const raw = query[key];
      if (raw === undefined) continue;
      const value = parseBool(raw);
      if (value === null) {
        throw new BadRequestError(`${key} parameter must be a boolean, got ${shown(raw)}`);
      }
      functions[key] = value;
    }
    await this.exclusive(() => this.commit({ ...this.params, otg_functions: functions }));
    return this.otgFunctions();
  }

  /** `POST /api/system/reinit_udc`: the USB devices re-enumerate with the stored identity. */
  async reinit(): Promise<void> {
    await this.exclusive(() => applyUsb(this.opts.usb, this.usbIdentity(this.params)));
  }

  // ---- internals ----

  /** Validates the whole query; nothing is applied here. */
  private parse(query: RawQuery): { next: StoredParams; absolute: boolean | null } {
    const next = structuredClone(this.params);
    let absolute: boolean | null = null;
    if (query['absolute_mouse'] !== undefined) {
      absolute = parseBool(query['absolute_mouse']);
      if (absolute === null) {
        throw new BadRequestError(
          `absolute_mouse parameter validation failed: The argument 'absolute_mouse' (${shown(query['absolute_mouse'])}) is not a valid bool`,
        );
      }
      const wanted = absolute ? ABSOLUTE_OUTPUT : RELATIVE_OUTPUT;
      const available = this.opts.hid.getState().mouse.outputs.available;
      if (!available.includes(wanted)) {
        throw new BadRequestError(
          `absolute_mouse parameter validation failed: mouse output ${wanted} is not available here`,
        );
      }
    }
    for (const key of ['privacy_enable', 'privacy_restore', 'enable_mic'] as const) {
      if (query[key] === undefined) continue;
      const value = parseBool(query[key]);
      if (value === null) {
        throw new BadRequestError(`${key} parameter must be a boolean, got ${shown(query[key])}`);
      }
      if (key === 'enable_mic') next.otg_functions.enable_mic = value;
      else next[key] = value;
    }
    for (const key of ['otg_vendor_id', 'otg_product_id'] as const) {
      const raw = query[key];
      if (raw === undefined) continue;
      const id = typeof raw === 'string' ? parseUsbId(raw) : null;
      if (id === null) throw new BadRequestError(`${key} must be a valid hexadecimal value`);
      next[key] = id;
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
      next[key] = raw;
    }
    return { next, absolute };
  }

  /** Stores `next`; re-applies the USB identity when it changed; undoes both if that fails. */
  private async commit(next: StoredParams): Promise<void> {
    const previous = this.params;
    const usbChanged = [...USB_KEYS].some((k) => previous[k] !== next[k]);
    this.params = next;
    try {
      await this.file.save(next);
      if (usbChanged) await applyUsb(this.opts.usb, this.usbIdentity(next));
    } catch (err) {
      this.params = previous;
      await this.file.save(previous).catch(() => undefined);
      if (usbChanged) {
        await this.opts.usb.apply(this.usbIdentity(previous)).catch(() => undefined);
      }
      throw err;
    }
    if (usbChanged) {
      this.opts.log?.info(
        { vendor: formatUsbId(next.otg_vendor_id), product: formatUsbId(next.otg_product_id) },
        'usb identity applied',
      );
    }
  }

  private usbIdentity(p: StoredParams): UsbIdentity {
    return {
      otg_manufacturer: p.otg_manufacturer,
      otg_product: p.otg_product,
      otg_vendor_id: p.otg_vendor_id,
      otg_product_id: p.otg_product_id,
      otg_serial: p.otg_serial,
    };
  }

  /** One apply at a time; a few wait behind it, more are refused. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.waiting > PARAMS_QUEUE_MAX) return Promise.reject(new SystemParamsBusyError());
    this.waiting++;
    const run = this.queue.then(fn);
    this.queue = run.then(
      () => this.waiting--,
      () => this.waiting--,
    );
    return run;
  }
}
