/**
 * For the gadget's unit tests: a fixture tree (`<tmp>/config`, `<tmp>/sys`, `<tmp>/dev`) and a
 * GadgetFs that plays the kernel's side of configfs on it, as far as the platform relies on it:
 * - mkdir makes a group's attribute files and default groups (a gadget's strings, configs,
 *   functions, os_desc; a config's strings; a mass storage function's lun.0); a HID function
 *   gets `dev` (maj:min), `<sys>/dev/char/<maj:min>/uevent` and `<dev>/hidgN`; a function whose
 *   module is in `missingModules` is refused (ENOENT, as when its module cannot be loaded);
 * - a write creates nothing (ENOENT for an attribute the kernel did not make);
 * - attribute files cannot be unlinked (EPERM), default groups cannot be removed (EPERM), a
 *   group with child groups (ENOTEMPTY) or a function still linked (EBUSY) cannot either;
 * - `UDC`: a name not in `<sys>/class/udc` → ENODEV, '' when unbound → ENODEV, a bind sets the
 *   UDC's state to `bindState`, an unbind to `not attached`;
 * - a UAC2 function (`uac2.*`): its attributes; bound, the board's sound card
 *   `<root>/proc/asound/UAC2Gadget` exists (until the unbind); with `isoless` the bind of a gadget
 *   that links one fails (ENODEV), as on a UDC without isochronous endpoints (dummy_hcd);
 * - a UVC function (`uvc.*`): its default groups (control/streaming headers and classes, the
 *   format folders) and interface numbers 0/1; with `isoless` it does not bind either;
 * - a LUN: `cdrom`/`ro` while a file is open → EBUSY, `file` of a missing path → ENOENT,
 *   `forced_eject` empties `file`.
 * Every write is recorded in `writes` (path relative to the tree, value).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { NodeGadgetFs } from './configfs';
import type { GadgetPlatformOptions } from './platform';
import type { HidFunctionSpec } from './types';

function errno(code: string, what: string): NodeJS.ErrnoException {
  const err = new Error(`${code}: ${what}`) as NodeJS.ErrnoException;
  err.code = code;
  return err;
}

const UAC2_ATTRS = [
  'p_chmask',
  'p_srate',
  'p_ssize',
  'c_chmask',
  'c_srate',
  'c_ssize',
  'c_sync',
  'req_number',
  'function_name',
];

const UVC_FRAME_ATTRS = [
  'bFrameIndex',
  'bmCapabilities',
  'wWidth',
  'wHeight',
  'dwMinBitRate',
  'dwMaxBitRate',
  'dwMaxVideoFrameBufferSize',
  'dwDefaultFrameInterval',
  'dwFrameInterval',
];

const LUN_ATTRS = ['file', 'ro', 'removable', 'cdrom', 'nofua', 'inquiry_string', 'forced_eject'];

type Group =
  | { kind: 'gadget' }
  | { kind: 'default' }
  | { kind: 'strings' }
  | { kind: 'config' }
  | { kind: 'config-strings' }
  | { kind: 'function'; type: string }
  | { kind: 'lun' }
  | { kind: 'other' };

export interface FixtureOptions {
  /** UDCs under `<sys>/class/udc` ([] = none). Default ['dummy_udc.0']. */
  udcs?: string[];
  /** Loaded modules under `<sys>/module`. Default libcomposite, usb_f_hid, usb_f_mass_storage. */
  modules?: string[];
  /** configfs mounted with libcomposite (`<config>/usb_gadget`). Default true. */
  configfs?: boolean;
}

export class FixtureKernel extends NodeGadgetFs {
  readonly config: string;
  readonly sys: string;
  readonly dev: string;
  readonly writes: Array<[string, string]> = [];
  /** performance.now() of each entry of `writes`. */
  readonly writeTimes: number[] = [];
  /** Groups whose rmdir fails with EBUSY (a kernel that holds on to them). */
  readonly stuck = new Set<string>();
  /** Modules whose functions cannot be made. */
  readonly missingModules = new Set<string>();
  /** The state a bind gives the UDC (the remote computer polls it). */
  bindState = 'configured';
  /** The UDC has no isochronous endpoints: a gadget with a UAC2 or UVC function does not bind. */
  isoless = false;
  private nextMinor = 0;

  private constructor(readonly root: string) {
    super();
    this.config = join(root, 'config');
    this.sys = join(root, 'sys');
    this.dev = join(root, 'dev');
  }

  static async make(opts: FixtureOptions = {}): Promise<FixtureKernel> {
    const root = await mkdtemp(join(tmpdir(), 'gadget-'));
    const k = new FixtureKernel(root);
    await fsp.mkdir(k.config, { recursive: true });
    if (opts.configfs ?? true) await fsp.mkdir(join(k.config, 'usb_gadget'));
    await fsp.mkdir(join(k.sys, 'class', 'udc'), { recursive: true });
    await fsp.mkdir(join(k.sys, 'dev', 'char'), { recursive: true });
    await fsp.mkdir(k.dev, { recursive: true });
    for (const udc of opts.udcs ?? ['dummy_udc.0']) await k.addUdc(udc);
    for (const m of opts.modules ?? [
      'libcomposite',
      'usb_f_hid',
      'usb_f_mass_storage',
      'usb_f_uac2',
      'usb_f_uvc',
    ]) {
      await fsp.mkdir(join(k.sys, 'module', m), { recursive: true });
    }
    return k;
  }

  async addUdc(name: string): Promise<void> {
    await fsp.mkdir(join(this.sys, 'class', 'udc', name), { recursive: true });
    await fsp.writeFile(join(this.sys, 'class', 'udc', name, 'state'), 'not attached\n');
  }

  async setUdcState(name: string, state: string): Promise<void> {
    // replaced in one step, as the kernel's attribute reads: a poll reading while writeFile
    // truncated the file saw '' (a flaky "reports every UDC state change" under load)
    const path = join(this.sys, 'class', 'udc', name, 'state');
    await fsp.writeFile(`${path}.new`, `${state}\n`);
    await fsp.rename(`${path}.new`, path);
  }

  async removeModule(name: string): Promise<void> {
    this.missingModules.add(name);
    await rm(join(this.sys, 'module', name), { recursive: true, force: true });
  }

  async cleanup(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }

  /** The platform's options on this tree. */
  options(hid: GadgetPlatformOptions['hid'] = FIXTURE_HID): Omit<GadgetPlatformOptions, 'log'> {
    return {
      configfs: this.config,
      sys: this.sys,
      dev: this.dev,
      name: 'kvm',
      udc: '',
      udcPollMs: 20,
      hid,
      fs: this,
      setup: null,
      nodeWaitMs: 200,
      rebindGapMs: 0,
    };
  }

  /** The value of a file of the tree (relative path), trailing newline dropped; null if none. */
  async read(rel: string): Promise<string | null> {
    try {
      return (await fsp.readFile(join(this.root, rel), 'utf8')).replace(/\n$/, '');
    } catch {
      return null;
    }
  }

  async readBytes(rel: string): Promise<Buffer> {
    return fsp.readFile(join(this.root, rel));
  }

  /** Writes recorded under a path (relative, prefix match). */
  writesUnder(prefix: string): Array<[string, string]> {
    return this.writes.filter(([p]) => p.startsWith(prefix));
  }

  // ---- the kernel's side ----

  private classify(path: string): Group {
    const rel = relative(join(this.config, 'usb_gadget'), resolve(path));
    if (rel.startsWith('..') || rel === '') return { kind: 'other' };
    const parts = rel.split(sep);
    if (parts.length === 1) return { kind: 'gadget' };
    const [, top, child, sub, leaf] = parts;
    if (parts.length === 2) {
      return ['strings', 'configs', 'functions', 'os_desc'].includes(top!)
        ? { kind: 'default' }
        : { kind: 'other' };
    }
    if (top === 'strings' && parts.length === 3) return { kind: 'strings' };
    if (top === 'configs') {
      if (parts.length === 3) return { kind: 'config' };
      if (parts.length === 4 && sub === 'strings') return { kind: 'default' };
      if (parts.length === 5 && leaf) return { kind: 'config-strings' };
    }
    if (top === 'functions') {
      if (parts.length === 3) return { kind: 'function', type: child!.split('.')[0]! };
      if (parts.length === 4 && sub === 'lun.0') return { kind: 'default' };
      if (parts.length === 4 && /^lun\.\d+$/.test(sub!)) return { kind: 'lun' };
    }
    return { kind: 'other' };
  }

  private async touch(dir: string, names: string[], values: Record<string, string> = {}) {
    for (const n of names) await fsp.writeFile(join(dir, n), values[n] ?? '');
  }

  override async mkdir(path: string): Promise<void> {
    const full = resolve(path);
    // parents first, as mkdir -p does
    const parent = resolve(full, '..');
    if (!(await this.exists(parent))) await this.mkdir(parent);
    if (await this.exists(full)) return;
    const group = this.classify(full);
    if (group.kind === 'function') {
      const module = {
        hid: 'usb_f_hid',
        mass_storage: 'usb_f_mass_storage',
        uac2: 'usb_f_uac2',
        uvc: 'usb_f_uvc',
      }[group.type];
      if (!module || this.missingModules.has(module)) throw errno('ENOENT', `mkdir ${full}`);
    }
    if (group.kind === 'default') {
      // made with their parent only
      throw errno('EPERM', `mkdir ${full}`);
    }
    await fsp.mkdir(full);
    switch (group.kind) {
      case 'gadget':
        await this.touch(full, [
          'UDC',
          'idVendor',
          'idProduct',
          'bcdDevice',
          'bcdUSB',
          'bDeviceClass',
          'bDeviceSubClass',
          'bDeviceProtocol',
          'bMaxPacketSize0',
        ]);
        for (const d of ['strings', 'configs', 'functions', 'os_desc']) {
          await fsp.mkdir(join(full, d));
        }
        break;
      case 'strings':
        await this.touch(full, ['manufacturer', 'product', 'serialnumber']);
        break;
      case 'config':
        await this.touch(full, ['MaxPower', 'bmAttributes']);
        await fsp.mkdir(join(full, 'strings'));
        break;
      case 'config-strings':
        await this.touch(full, ['configuration']);
        break;
      case 'function':
        if (group.type === 'hid') {
          const minor = this.nextMinor++;
          const devno = `236:${minor}`;
          await this.touch(
            full,
            ['protocol', 'subclass', 'report_length', 'report_desc', 'no_out_endpoint', 'dev'],
            { dev: `${devno}\n` },
          );
          await fsp.mkdir(join(this.sys, 'dev', 'char', devno), { recursive: true });
          await fsp.writeFile(
            join(this.sys, 'dev', 'char', devno, 'uevent'),
            `MAJOR=236\nMINOR=${minor}\nDEVNAME=hidg${minor}\n`,
          );
          await fsp.writeFile(join(this.dev, `hidg${minor}`), '');
        } else if (group.type === 'uvc') {
          // the default groups and read-only attributes the kernel makes with the function
          await this.touch(full, [
            'streaming_maxpacket',
            'streaming_interval',
            'streaming_maxburst',
          ]);
          for (const d of ['control/class/fs', 'control/class/ss', 'control/header']) {
            await fsp.mkdir(join(full, d), { recursive: true });
          }
          for (const d of ['class/fs', 'class/hs', 'class/ss', 'header', 'uncompressed', 'mjpeg']) {
            await fsp.mkdir(join(full, 'streaming', d), { recursive: true });
          }
          await this.touch(join(full, 'control'), ['bInterfaceNumber'], {
            bInterfaceNumber: '0\n',
          });
          await this.touch(join(full, 'streaming'), ['bInterfaceNumber'], {
            bInterfaceNumber: '1\n',
          });
        } else if (group.type === 'uac2') {
          await this.touch(full, UAC2_ATTRS);
        } else {
          await this.touch(full, ['stall']);
          await fsp.mkdir(join(full, 'lun.0'));
          await this.touch(join(full, 'lun.0'), LUN_ATTRS);
        }
        break;
      case 'lun':
        await this.touch(full, LUN_ATTRS);
        break;
      default:
        // a UVC function's frame (streaming/uncompressed/<format>/<frame>) gets its attributes
        if (
          /[/]functions[/]uvc\.[^/]+[/]streaming[/](uncompressed|mjpeg)[/][^/]+[/][^/]+$/.test(full)
        ) {
          await this.touch(full, UVC_FRAME_ATTRS);
        }
        break;
    }
  }

  override async writeFile(path: string, data: string | Uint8Array): Promise<void> {
    const full = resolve(path);
    const value = typeof data === 'string' ? data : Buffer.from(data).toString('hex');
    const rel = relative(this.root, full);
    const name = full.split(sep).pop()!;
    const dir = resolve(full, '..');
    if (!(await this.exists(full))) throw errno('ENOENT', `write ${full}`);
    if (this.classify(dir).kind === 'gadget' && name === 'UDC') {
      const current = (await fsp.readFile(full, 'utf8')).trim();
      const text = String(data).trim();
      if (text === '') {
        if (!current) throw errno('ENODEV', 'UDC: not bound');
        await this.setUdcState(current, 'not attached').catch(() => undefined);
        await fsp.rm(this.soundCard, { recursive: true, force: true });
      } else {
        if (current) throw errno('EBUSY', 'UDC: bound already');
        if (!(await this.exists(join(this.sys, 'class', 'udc', text)))) {
          throw errno('ENODEV', `UDC ${text}`);
        }
        const sound = await this.linksUac2(dir);
        const webcam = await this.exists(join(dir, 'configs', 'c.1', 'uvc.usb0'));
        if ((sound || webcam) && this.isoless)
          throw errno('ENODEV', `UDC ${text}: no isochronous endpoint`);
        await this.setUdcState(text, this.bindState);
        if (sound) await fsp.mkdir(this.soundCard, { recursive: true });
      }
    }
    const lunKind = this.classify(dir).kind;
    if (lunKind === 'lun' || (lunKind === 'default' && dir.endsWith(`${sep}lun.0`))) {
      const open = (await fsp.readFile(join(dir, 'file'), 'utf8')).trim() !== '';
      if ((name === 'cdrom' || name === 'ro') && open) throw errno('EBUSY', `${name} while open`);
      if (name === 'file' && String(data).trim() !== '') {
        if (!(await this.exists(String(data).trim()))) throw errno('ENOENT', String(data));
      }
      if (name === 'forced_eject') {
        this.writes.push([rel, value]);
        this.writeTimes.push(performance.now());
        await fsp.writeFile(join(dir, 'file'), '');
        return;
      }
    }
    this.writes.push([rel, value]);
    this.writeTimes.push(performance.now());
    await fsp.writeFile(full, data);
  }

  /** The board's ALSA card of the UAC2 function while bound (`<proc>/asound/<id>`). */
  get soundCard(): string {
    return join(this.root, 'proc', 'asound', 'UAC2Gadget');
  }

  private async linksUac2(gadget: string): Promise<boolean> {
    for (const c of await fsp.readdir(join(gadget, 'configs')).catch(() => [])) {
      const entries = await fsp.readdir(join(gadget, 'configs', c)).catch(() => []);
      if (entries.some((e) => e.startsWith('uac2.'))) return true;
    }
    return false;
  }

  override async unlink(path: string): Promise<void> {
    const st = await fsp.lstat(path);
    if (!st.isSymbolicLink() && this.classify(resolve(path, '..')).kind !== 'other') {
      throw errno('EPERM', `unlink ${path}`);
    }
    await fsp.unlink(path);
  }

  override async rmdir(path: string): Promise<void> {
    const full = resolve(path);
    if (this.stuck.has(full)) throw errno('EBUSY', `rmdir ${full}`);
    const group = this.classify(full);
    if (group.kind === 'other') return fsp.rmdir(full);
    if (group.kind === 'default') throw errno('EPERM', `rmdir ${full}`);
    const entries = await fsp.readdir(full, { withFileTypes: true });
    for (const e of entries) {
      if (e.isSymbolicLink()) throw errno('ENOTEMPTY', `rmdir ${full}: link ${e.name}`);
      if (e.isDirectory()) {
        const child = this.classify(join(full, e.name));
        if (child.kind !== 'default') throw errno('ENOTEMPTY', `rmdir ${full}: ${e.name}`);
        // a default group with user groups inside (a config's strings/0x409)
        const inner = await fsp.readdir(join(full, e.name), { withFileTypes: true });
        if (inner.some((i) => i.isDirectory())) throw errno('ENOTEMPTY', `rmdir ${full}`);
      }
    }
    if (group.kind === 'function') {
      const gadget = resolve(full, '..', '..');
      for (const c of await fsp.readdir(join(gadget, 'configs')).catch(() => [])) {
        for (const e of await fsp.readdir(join(gadget, 'configs', c), { withFileTypes: true })) {
          if (!e.isSymbolicLink()) continue;
          const target = resolve(
            join(gadget, 'configs', c),
            await fsp.readlink(join(gadget, 'configs', c, e.name)),
          );
          if (target === full) throw errno('EBUSY', `rmdir ${full}: linked`);
        }
      }
    }
    await fsp.rm(full, { recursive: true });
  }
}

/** Small distinct descriptors standing in for reports.ts's. */
export const FIXTURE_HID: {
  keyboard: HidFunctionSpec;
  absolute: HidFunctionSpec;
  relative: HidFunctionSpec;
} = {
  keyboard: {
    protocol: 1,
    subclass: 1,
    reportLength: 8,
    descriptor: Uint8Array.of(0x05, 0x01, 0x09, 0x06),
  },
  absolute: {
    protocol: 0,
    subclass: 0,
    reportLength: 7,
    descriptor: Uint8Array.of(0x05, 0x01, 0x09, 0x02, 0xaa),
  },
  relative: {
    protocol: 2,
    subclass: 1,
    reportLength: 5,
    descriptor: Uint8Array.of(0x05, 0x01, 0x09, 0x02, 0xbb),
  },
};

/** Polls `check` until it holds (or throws after `timeoutMs`). */
export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 3000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
