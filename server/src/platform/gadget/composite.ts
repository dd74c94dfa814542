/**
 * The composite gadget's layout on configfs, written and removed (platform.ts decides when):
 * the USB identity (idVendor, idProduct, bcdDevice, bcdUSB 0x0200 and the three strings), one
 * configuration `c.1`, the HID functions (`hid.usb0` keyboard, `hid.usb1` absolute, `hid.usb2`
 * relative mouse) and `mass_storage.usb0` with `lun.0` (the image drive) and `lun.1` (GL's
 * partition drive, read-only), each linked into the configuration.
 */
import { join } from 'node:path';
import type { OtgFunctions } from '@kvm/protocol';
import type { Logger } from '../../log';
import { errnoCode, listDir, readAttr, removeGroup, type GadgetFs } from './configfs';
import type { GadgetMouseMode, HidFunctionSpec } from './types';
import { removeUvcFunction, UVC_FN } from './uvc';

export const KEYBOARD_FN = 'hid.usb0';
export const ABSOLUTE_MOUSE_FN = 'hid.usb1';
export const RELATIVE_MOUSE_FN = 'hid.usb2';
export const MSD_FN = 'mass_storage.usb0';
/** The USB sound card (UAC2): the remote computer's speaker and microphone (issue 24). */
export const UAC2_FN = 'uac2.usb0';
export const CONFIG = 'configs/c.1';
/** English (United States), the strings' language. */
const LANG = '0x409';
const BCD_DEVICE = '0x0100';
const MAX_POWER_MA = 250;

export interface GadgetIdentity {
  vendorId: number;
  productId: number;
  manufacturer: string;
  product: string;
  /** '' = no serial string. */
  serial: string;
}

export interface GadgetSettings {
  identity: GadgetIdentity;
  /** The vendor part of the drive's SCSI INQUIRY answer (system params cdrom_vendor, flash_vendor). */
  inquiry: { cdrom: string; flash: string };
  functions: OtgFunctions;
  mouseMode: GadgetMouseMode;
}

export const DEFAULT_GADGET_SETTINGS: GadgetSettings = {
  identity: {
    vendorId: 0x1d6b,
    productId: 0x0104,
    manufacturer: 'Linux Foundation',
    product: 'Multifunction Composite Gadget',
    serial: '',
  },
  inquiry: { cdrom: 'Linux', flash: 'Linux' },
  functions: {
    enable_keyboard: true,
    enable_mouse: true,
    enable_mouse_alt: false,
    start_cdrom: true,
    start_flash: false,
    enable_mic: false,
  },
  mouseMode: 'absolute',
};

export interface GadgetImage {
  path: string;
  cdrom: boolean;
  rw: boolean;
}

function hex4(n: number): string {
  return `0x${n.toString(16).padStart(4, '0')}`;
}

/** SCSI INQUIRY: vendor (8), product (16), revision (4), as the kernel's inquiry_string takes it. */
export function inquiryString(vendor: string, cdrom: boolean): string {
  const product = cdrom ? 'File-CD Gadget' : 'File-Stor Gadget';
  return `${vendor.slice(0, 8).padEnd(8)}${product.padEnd(16)}0100`;
}

export function sameSettings(a: GadgetSettings, b: GadgetSettings): boolean {
  // the microphone is not a function of this gadget yet
  const strip = (s: GadgetSettings) => ({ ...s, functions: { ...s.functions, enable_mic: false } });
  return JSON.stringify(strip(a)) === JSON.stringify(strip(b));
}

/** The HID functions the settings ask for, in the order they are made. */
export function hidFunctions(
  s: GadgetSettings,
  specs: { keyboard: HidFunctionSpec; absolute: HidFunctionSpec; relative: HidFunctionSpec },
): Array<[string, HidFunctionSpec]> {
  const f = s.functions;
  const hid: Array<[string, HidFunctionSpec]> = [];
  if (f.enable_keyboard) hid.push([KEYBOARD_FN, specs.keyboard]);
  if (f.enable_mouse) {
    if (f.enable_mouse_alt || s.mouseMode === 'absolute')
      hid.push([ABSOLUTE_MOUSE_FN, specs.absolute]);
    if (f.enable_mouse_alt || s.mouseMode === 'relative')
      hid.push([RELATIVE_MOUSE_FN, specs.relative]);
  }
  return hid;
}

/** The gadget folder with its identity and its one configuration (no functions yet). */
export async function makeGadget(fs: GadgetFs, dir: string, s: GadgetSettings): Promise<void> {
  await fs.mkdir(dir);
  await fs.writeFile(join(dir, 'idVendor'), hex4(s.identity.vendorId));
  await fs.writeFile(join(dir, 'idProduct'), hex4(s.identity.productId));
  await fs.writeFile(join(dir, 'bcdDevice'), BCD_DEVICE);
  await fs.writeFile(join(dir, 'bcdUSB'), '0x0200');
  const strings = join(dir, 'strings', LANG);
  await fs.mkdir(strings);
  await fs.writeFile(join(strings, 'manufacturer'), s.identity.manufacturer);
  await fs.writeFile(join(strings, 'product'), s.identity.product);
  if (s.identity.serial !== '') {
    await fs.writeFile(join(strings, 'serialnumber'), s.identity.serial);
  }
  const config = join(dir, CONFIG);
  await fs.mkdir(join(config, 'strings', LANG));
  await fs.writeFile(join(config, 'MaxPower'), String(MAX_POWER_MA));
  await fs.writeFile(join(config, 'strings', LANG, 'configuration'), 'Config 1');
}

/** One HID function, linked into the configuration; nothing of it is left if this throws. */
export async function makeHidFunction(
  fs: GadgetFs,
  gadgetDir: string,
  fn: string,
  spec: HidFunctionSpec,
): Promise<void> {
  const dir = join(gadgetDir, 'functions', fn);
  try {
    await fs.mkdir(dir);
    await fs.writeFile(join(dir, 'protocol'), String(spec.protocol));
    await fs.writeFile(join(dir, 'subclass'), String(spec.subclass));
    await fs.writeFile(join(dir, 'report_length'), String(spec.reportLength));
    await fs.writeFile(join(dir, 'report_desc'), spec.descriptor);
    await fs.symlink(dir, join(gadgetDir, CONFIG, fn));
  } catch (err) {
    await removeGroup(fs, dir).catch(() => undefined);
    throw err;
  }
}

/**
 * The mass storage function with lun.0 (empty, of the type and read-only flag given) and lun.1
 * (GL's partition drive: a read-only flash drive), linked; nothing of it is left if this throws.
 */
export async function makeMsdFunction(
  fs: GadgetFs,
  gadgetDir: string,
  lun0: { cdrom: boolean; ro: boolean },
  inquiry: GadgetSettings['inquiry'],
): Promise<void> {
  const dir = join(gadgetDir, 'functions', MSD_FN);
  try {
    await fs.mkdir(dir);
    // lun.0 comes with the function (mkdir -p of it changes nothing on configfs); lun.1 is
    // GL's partition drive
    await fs.mkdir(join(dir, 'lun.0'));
    await fs.mkdir(join(dir, 'lun.1'));
    await fs.writeFile(join(dir, 'lun.0', 'removable'), '1');
    await writeLun(fs, join(dir, 'lun.0'), lun0.cdrom, lun0.ro, null, inquiry);
    await fs.writeFile(join(dir, 'lun.1', 'removable'), '1');
    await fs.writeFile(join(dir, 'lun.1', 'cdrom'), '0');
    await fs.writeFile(join(dir, 'lun.1', 'ro'), '1');
    await fs.writeFile(join(dir, 'lun.1', 'inquiry_string'), inquiryString(inquiry.flash, false));
    await fs.symlink(dir, join(gadgetDir, CONFIG, MSD_FN));
  } catch (err) {
    await removeGroup(fs, dir).catch(() => undefined);
    throw err;
  }
}

/**
 * The UAC2 function's format, both ways (configfs-usb-gadget-uac2): `p_*` is what the board
 * plays to the remote computer (its microphone input), `c_*` what the board captures from it
 * (its speaker output). The kernel makes the board's ALSA card (id `UAC2Gadget`) when the gadget
 * binds and removes it when it unbinds.
 */
export interface Uac2Spec {
  /** Channels (a mask of the first N bits is written), both ways. */
  channels: number;
  /** Hz, both ways. */
  rate: number;
  /** Bytes per sample, both ways. */
  sampleBytes: 2 | 3 | 4;
}

/** The UAC2 function, linked; nothing of it is left if this throws. */
export async function makeUac2Function(
  fs: GadgetFs,
  gadgetDir: string,
  spec: Uac2Spec,
): Promise<void> {
  const dir = join(gadgetDir, 'functions', UAC2_FN);
  const mask = String((1 << spec.channels) - 1);
  try {
    await fs.mkdir(dir);
    for (const side of ['p', 'c']) {
      await fs.writeFile(join(dir, `${side}_chmask`), mask);
      await fs.writeFile(join(dir, `${side}_srate`), String(spec.rate));
      await fs.writeFile(join(dir, `${side}_ssize`), String(spec.sampleBytes));
    }
    await fs.symlink(dir, join(gadgetDir, CONFIG, UAC2_FN));
  } catch (err) {
    await removeGroup(fs, dir).catch(() => undefined);
    throw err;
  }
}

/** Takes a made function out of the configuration and removes it (a bind failed with it). */
export async function removeFunction(fs: GadgetFs, gadgetDir: string, fn: string): Promise<void> {
  const link = join(gadgetDir, CONFIG, fn);
  if (await fs.exists(link)) await fs.unlink(link);
  await removeGroup(fs, join(gadgetDir, 'functions', fn));
}

/** Type, read-only flag, INQUIRY and (if any) file; the kernel refuses the type while open. */
export async function writeLun(
  fs: GadgetFs,
  lun: string,
  cdrom: boolean,
  ro: boolean,
  file: string | null,
  inquiry: GadgetSettings['inquiry'],
): Promise<void> {
  await fs.writeFile(join(lun, 'cdrom'), cdrom ? '1' : '0');
  await fs.writeFile(join(lun, 'ro'), ro ? '1' : '0');
  const vendor = cdrom ? inquiry.cdrom : inquiry.flash;
  await fs.writeFile(join(lun, 'inquiry_string'), inquiryString(vendor, cdrom));
  if (file !== null) await fs.writeFile(join(lun, 'file'), file);
}

/** Takes the medium out even if the remote computer locked it (forced_eject, kernel 5.9+). */
export async function ejectLun(fs: GadgetFs, lun: string): Promise<void> {
  const file = await readAttr(fs, join(lun, 'file'));
  if (!file) return;
  try {
    await fs.writeFile(join(lun, 'forced_eject'), '1');
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
    await fs.writeFile(join(lun, 'file'), '');
  }
}

/**
 * Removes the gadget folder, whatever a crash left in it: UDC "" → every configuration's
 * function links, its strings, itself → every function → the gadget's strings → the gadget.
 * `onUnbound` is called as soon as a bound gadget was unbound (before the rest, which may throw).
 */
export async function removeGadget(
  fs: GadgetFs,
  dir: string,
  log: Logger,
  onUnbound: () => void,
): Promise<void> {
  if (!(await fs.exists(dir))) return;
  const bound = await readAttr(fs, join(dir, 'UDC'));
  if (bound) {
    await fs.writeFile(join(dir, 'UDC'), '').then(onUnbound, (err: Error) => {
      log.warn({ err: err.message }, 'gadget: unbinding the old gadget failed');
    });
  }
  for (const config of await listDir(fs, join(dir, 'configs'))) {
    if (config.kind !== 'dir') continue;
    const cdir = join(dir, 'configs', config.name);
    for (const entry of await listDir(fs, cdir)) {
      if (entry.kind === 'link') await fs.unlink(join(cdir, entry.name));
    }
    for (const lang of await listDir(fs, join(cdir, 'strings'))) {
      if (lang.kind === 'dir') await removeGroup(fs, join(cdir, 'strings', lang.name));
    }
    await removeGroup(fs, cdir);
  }
  for (const entry of await listDir(fs, join(dir, 'os_desc'))) {
    if (entry.kind === 'link') await fs.unlink(join(dir, 'os_desc', entry.name));
  }
  for (const fn of await listDir(fs, join(dir, 'functions'))) {
    // the webcam's tree has user-made groups linked to each other: removed in its own order
    if (fn.name === UVC_FN) await removeUvcFunction(fs, dir);
    else if (fn.kind === 'dir') await removeGroup(fs, join(dir, 'functions', fn.name));
  }
  for (const lang of await listDir(fs, join(dir, 'strings'))) {
    if (lang.kind === 'dir') await removeGroup(fs, join(dir, 'strings', lang.name));
  }
  await removeGroup(fs, dir);
}
