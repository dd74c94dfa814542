/**
 * System params (GL §5.3, 5.13; SPEC 3 "System params", "USB identity"): the USB identity the
 * remote computer sees, the virtual media vendor strings, the microphone name, privacy flags and
 * the OTG functions. Stored in `<data_dir>/system/params.json` (atomic); `absolute_mouse` is the
 * HID service's mouse output and `msd_type` the virtual media's mode, both read live.
 *
 * Every request is validated whole by its route (identity-input.ts) before anything is applied;
 * the service takes the typed change. A USB identity change goes to the
 * driver (re-enumeration); if the driver fails, the stored params are put back and the error is
 * the answer. Applies run one at a time (SerialQueue); a few wait, more answer 409.
 */
import { join } from 'node:path';
import {
  DEFAULT_IDENTITY_PRESET,
  deviceIdentityPreset,
  formatUsbId,
  isPlainText,
  matchIdentityPreset,
  parseUsbId,
  validateUsbIdentity,
  type DeviceIdentityPreset,
  type HidState,
  type MsdState,
  type OtgFunctions,
  type SystemParams,
  type UsbIdentityField,
} from '@kvm/protocol';
import { ApiError, InternalError, IsBusyError } from '../../errors';
import { SILENT_LOGGER, type Logger } from '../../log';
import { JsonFile } from '../../storage/json-store';
import type { UsbIdentity, UsbIdentityDriver } from '../../drivers/usb/types';
import { SerialQueue } from '../../sync/serial-queue';
import {
  ABSOLUTE_OUTPUT,
  OTG_FUNCTION_KEYS,
  PARAM_STRING_MAX,
  RELATIVE_OUTPUT,
  type ParamsChange,
} from './identity-input';

/** GL's default ids: here the Linux Foundation composite gadget (the `default` preset). */
const DEFAULT_PRESET = deviceIdentityPreset(DEFAULT_IDENTITY_PRESET)!;
export const DEFAULT_VENDOR_ID = parseUsbId(DEFAULT_PRESET.otg_vendor_id)!;
export const DEFAULT_PRODUCT_ID = parseUsbId(DEFAULT_PRESET.otg_product_id)!;

/** Applies waiting behind the running one; past this a request answers 409. */
export const PARAMS_QUEUE_MAX = 4;

/** 409: too many parameter changes at once (one runs, a few wait). */
export class SystemParamsBusyError extends IsBusyError {
  static override readonly defaultMessage = 'Another system parameter change is in progress';
}

/** 500: the USB devices could not be re-enumerated (the previous identity stays). */
export class UsbIdentityApplyError extends InternalError {}

async function applyUsb(
  usb: UsbIdentityDriver,
  identity: UsbIdentity,
  reinit = false,
): Promise<void> {
  try {
    if (reinit && usb.reinit) await usb.reinit(identity);
    else await usb.apply(identity);
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
  for (const key of OTG_FUNCTION_KEYS) {
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

/** `<data>/system/params.json`, read field by field (parseStored). */
export function storedParamsFile(
  dataDir: string,
  defaults: StoredParams = defaultParams(''),
): JsonFile<StoredParams> {
  return new JsonFile(join(dataDir, 'system', 'params.json'), (raw) => parseStored(raw, defaults), {
    maxBytes: 64 * 1024,
  });
}

/** The USB identity a stored params file gives (the gadget builds with it at start). */
export function usbIdentityOf(p: StoredParams): UsbIdentity {
  return {
    otg_manufacturer: p.otg_manufacturer,
    otg_product: p.otg_product,
    otg_vendor_id: p.otg_vendor_id,
    otg_product_id: p.otg_product_id,
    otg_serial: p.otg_serial,
    inquiry: { cdrom: p.cdrom_vendor, flash: p.flash_vendor },
    functions: { ...p.otg_functions },
  };
}

export class IdentityService {
  /** One apply at a time; a few wait behind it, more are refused. */
  private readonly applies = new SerialQueue({
    max: PARAMS_QUEUE_MAX,
    busyError: () => new SystemParamsBusyError(),
  });

  private constructor(
    private params: StoredParams,
    private readonly file: JsonFile<StoredParams>,
    private readonly opts: IdentityServiceOptions,
  ) {}

  static async open(opts: IdentityServiceOptions): Promise<IdentityService> {
    const log = opts.log ?? SILENT_LOGGER;
    const defaults = defaultParams(opts.defaultMsdPartition);
    const file = storedParamsFile(opts.dataDir, defaults);
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

  /** The HID's mouse outputs, for the route's `absolute_mouse` check (parseParamsQuery). */
  mouseOutputs(): readonly string[] {
    return this.opts.hid.getState().mouse.outputs.available;
  }

  /** `POST /api/system/set_param` with the route's parsed change: the answer omits the defaults (GL). */
  async set(
    change: ParamsChange,
  ): Promise<Omit<SystemParams, 'default_product_id' | 'default_vendor_id'>> {
    const { absolute_mouse: absolute, enable_mic, ...fields } = change;
    await this.applies.run(async () => {
      const next: StoredParams = { ...structuredClone(this.params), ...fields };
      if (enable_mic !== undefined) next.otg_functions.enable_mic = enable_mic;
      await this.commit(next);
      if (absolute !== undefined) {
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
    preset: DeviceIdentityPreset,
  ): Promise<{ success: true; preset: DeviceIdentityPreset; params: SystemParams }> {
    await this.applies.run(() =>
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

  /** `POST /api/system/otg_functions` with the flags the route parsed; stored (docs/system.md). */
  async setOtgFunctions(change: Partial<OtgFunctions>): Promise<OtgFunctions> {
    await this.applies.run(() =>
      this.commit({
        ...this.params,
        otg_functions: { ...this.params.otg_functions, ...change },
      }),
    );
    return this.otgFunctions();
  }

  /** `POST /api/system/reinit_udc`: the USB devices re-enumerate with the stored identity. */
  async reinit(): Promise<void> {
    await this.applies.run(() => applyUsb(this.opts.usb, this.usbIdentity(this.params), true));
  }

  // ---- internals ----

  /** Stores `next`; re-applies the USB identity when it changed; undoes both if that fails. */
  private async commit(next: StoredParams): Promise<void> {
    const previous = this.params;
    const usbChanged =
      [...USB_KEYS].some((k) => previous[k] !== next[k]) ||
      // the gadget builds its functions from them
      (this.opts.usb.appliesFunctions === true &&
        JSON.stringify(previous.otg_functions) !== JSON.stringify(next.otg_functions));
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
    return usbIdentityOf(p);
  }
}
