/**
 * The gadget target's shared part: one composite USB gadget made through configfs
 * (`<configfs>/usb_gadget/<name>`, libcomposite) and bound to the board's UDC. The HID driver
 * sees it as a GadgetHidHost (types.ts), the MSD and USB identity drivers through the methods
 * below; /api/info shows problems() and the UDC.
 *
 * The gadget: the USB identity (idVendor, idProduct, bcdDevice, bcdUSB 0x0200 and the three
 * strings), one configuration `c.1`, and the functions the OTG flags ask for, linked into it in
 * this order: `hid.usb0` keyboard, `hid.usb1` absolute and/or `hid.usb2` relative mouse (both
 * with `enable_mouse_alt`, so a mode switch needs no re-enumeration), `mass_storage.usb0` with
 * `lun.0` (the image drive) and `lun.1` (GL's partition drive, read-only). Then the UDC's name
 * is written to `UDC`: the remote computer enumerates it.
 *
 * Every change that the remote computer must enumerate again (mouse mode without both mice, the
 * identity, the functions, reinit_udc) is a rebuild: unbind, tear the gadget down, make it
 * again, bind; the images lent stay lent. Rebuilds and drive changes run one at a time.
 *
 * Faults never stop the server: with configfs missing, a function's module missing or no UDC,
 * every function that can be made is made (a mass storage failure never costs the keyboard),
 * and problems() says exactly what is missing.
 */
import { join } from 'node:path';
import type { OtgFunctions } from '@kvm/protocol';
import { SILENT_LOGGER, type Logger } from '../../log';
import type { CommandRunner } from '../../process/run';
import { SerialQueue } from '../../sync/serial-queue';
import { errnoCode, listDir, NodeGadgetFs, readAttr, removeGroup, type GadgetFs } from './configfs';
import type {
  GadgetHidHost,
  GadgetHidNodes,
  GadgetMouseMode,
  HidFunctionSpec,
  UdcState,
} from './types';

export const KEYBOARD_FN = 'hid.usb0';
export const ABSOLUTE_MOUSE_FN = 'hid.usb1';
export const RELATIVE_MOUSE_FN = 'hid.usb2';
export const MSD_FN = 'mass_storage.usb0';
export const CONFIG = 'configs/c.1';
/** English (United States), the strings' language. */
const LANG = '0x409';
const BCD_DEVICE = '0x0100';
const MAX_POWER_MA = 250;
/**
 * The least time between an unbind and the next bind, a precaution: a host reads its hub's
 * port status every ~256 ms (a high-speed hub's interrupt interval; usbcore polls a root hub
 * every 250 ms), and a gadget gone for less may be seen as a glitch of a device still there.
 * (The device VM's host re-enumerated after 643-989 ms apart; shorter was not tried.)
 */
export const REBIND_GAP_MS = 500;

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

export interface GadgetUdcInfo {
  name: string;
  state: UdcState;
}

export interface GadgetPlatformOptions {
  /** configfs's mount point. */
  configfs: string;
  /** sysfs (`class/udc`, `dev/char`, `module`). */
  sys: string;
  /** Where `/dev/hidgN` appear. */
  dev: string;
  /** The gadget's folder name under `usb_gadget`. */
  name: string;
  /** The UDC to bind; '' = the first one. */
  udc: string;
  udcPollMs: number;
  /** The report descriptors (platform/gadget/reports.ts). */
  hid: { keyboard: HidFunctionSpec; absolute: HidFunctionSpec; relative: HidFunctionSpec };
  /** The stored settings to build with at start (so the start enumerates once). */
  initial?: () => Promise<Partial<GadgetSettings>>;
  fs?: GadgetFs;
  /**
   * modprobe and mount at start when configfs or libcomposite are missing; only as root and only
   * when the programs are there (a board's systemd normally did it). null: never.
   */
  setup?: { run: CommandRunner; root: boolean } | null;
  /** How long a bound function's `/dev` node may take to appear. */
  nodeWaitMs?: number;
  /** The least time the gadget stays unbound before a bind (REBIND_GAP_MS). */
  rebindGapMs?: number;
  log?: Logger;
}

type Listener<T> = (value: T) => void;

/** What one function needs of its module when it cannot be made. */
const FUNCTION_MODULE: Record<string, string> = {
  hid: 'usb_f_hid',
  mass_storage: 'usb_f_mass_storage',
};

const FUNCTION_WHAT: Record<string, string> = {
  [KEYBOARD_FN]: 'no keyboard',
  [ABSOLUTE_MOUSE_FN]: 'no absolute mouse',
  [RELATIVE_MOUSE_FN]: 'no relative mouse',
  [MSD_FN]: 'no virtual media',
};

function hex4(n: number): string {
  return `0x${n.toString(16).padStart(4, '0')}`;
}

/** SCSI INQUIRY: vendor (8), product (16), revision (4), as the kernel's inquiry_string takes it. */
export function inquiryString(vendor: string, cdrom: boolean): string {
  const product = cdrom ? 'File-CD Gadget' : 'File-Stor Gadget';
  return `${vendor.slice(0, 8).padEnd(8)}${product.padEnd(16)}0100`;
}

function sameSettings(a: GadgetSettings, b: GadgetSettings): boolean {
  // the microphone is not a function of this gadget yet
  const strip = (s: GadgetSettings) => ({ ...s, functions: { ...s.functions, enable_mic: false } });
  return JSON.stringify(strip(a)) === JSON.stringify(strip(b));
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class GadgetPlatform implements GadgetHidHost {
  private readonly fs: GadgetFs;
  private readonly log: Logger;
  private readonly queue = new SerialQueue();
  private settings: GadgetSettings = structuredClone(DEFAULT_GADGET_SETTINGS);

  /** Problems found by the last build (configfs, modules, binding). */
  private buildProblems: string[] = [];
  /** What the last teardown could not remove. */
  private teardownProblem: string | null = null;
  /** The UDC's problem, kept by the poll (none, the named one gone...). */
  private udcProblem: string | null = null;
  /** Functions made and linked by the last build. */
  private made = new Set<string>();
  private nodes: Record<string, string | null> = {};
  /** The UDC the gadget is bound to, null when unbound. */
  private boundUdc: string | null = null;
  /** The UDC whose state is shown (the bound one or the one that would be). */
  private udcName: string | null = null;
  private state: UdcState = 'missing';
  private wantConnected = true;
  /** What lun.0 / lun.1 hold. */
  private lun0: GadgetImage | null = null;
  private lun1: string | null = null;
  /** lun.0's type when the remote computer last enumerated the gadget. */
  private enumeratedCdrom = true;
  /** lun.0's type while it is empty (start_cdrom / start_flash, then the last image's). */
  private lun0Cdrom = true;
  private lastRebuildMs: number | null = null;
  /** When this process last unbound the gadget (performance.now()). */
  private unboundAt: number | null = null;

  /** The last build found no `usb_gadget` (configfs or libcomposite missing): the poll looks. */
  private gadgetless = false;
  private poll: NodeJS.Timeout | null = null;
  private polling = false;
  private disposed = false;

  private readonly udcListeners = new Set<Listener<UdcState>>();
  private readonly rebuiltListeners = new Set<() => void>();
  private readonly rebuildingListeners = new Set<() => Promise<void>>();
  private readonly changeListeners = new Set<() => void>();

  constructor(private readonly opts: GadgetPlatformOptions) {
    this.fs = opts.fs ?? new NodeGadgetFs();
    this.log = opts.log ?? SILENT_LOGGER;
  }

  get gadgetDir(): string {
    return join(this.opts.configfs, 'usb_gadget', this.opts.name);
  }

  // ---- lifecycle ----

  async init(): Promise<void> {
    if (this.opts.initial) {
      try {
        const initial = await this.opts.initial();
        this.settings = { ...this.settings, ...structuredClone(initial) };
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, 'gadget: stored settings unreadable');
      }
    }
    this.lun0Cdrom = this.startCdrom();
    await this.queue.run(async () => {
      await this.setup().catch((err: Error) => {
        this.log.warn({ err: err.message }, 'gadget: module and configfs setup failed');
      });
      const started = performance.now();
      await this.safeTeardown();
      await this.build();
      this.log.info(
        {
          ms: Math.round(performance.now() - started),
          functions: [...this.made],
          udc: this.boundUdc,
          problems: this.buildProblems,
        },
        'gadget: made',
      );
    });
    await this.readUdcState();
    // the drivers started before the gadget was made: they take its nodes now
    this.emitRebuilt();
    this.emitChange();
    this.schedulePoll();
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    if (this.poll) clearTimeout(this.poll);
    this.poll = null;
    await this.queue
      .run(() => this.teardown())
      .catch((err: Error) => {
        this.log.warn({ err: err.message }, 'gadget: not torn down at stop');
      });
  }

  // ---- what /api/info shows ----

  /** Exactly what is missing for the USB side to work, for the admin; [] when nothing is. */
  problems(): string[] {
    return [this.teardownProblem, ...this.buildProblems, this.udcProblem].filter(
      (p): p is string => p !== null,
    );
  }

  udc(): GadgetUdcInfo | null {
    return this.udcName ? { name: this.udcName, state: this.state } : null;
  }

  /** Called when problems() or udc() may have changed. */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** How long the last rebuild took (unbind to bound again), null before the first. */
  rebuildMs(): number | null {
    return this.lastRebuildMs;
  }

  // ---- GadgetHidHost ----

  udcState(): UdcState {
    return this.state;
  }

  onUdcState(listener: (state: UdcState) => void): () => void {
    this.udcListeners.add(listener);
    return () => this.udcListeners.delete(listener);
  }

  hidNodes(): GadgetHidNodes {
    const mouseFn = this.settings.mouseMode === 'absolute' ? ABSOLUTE_MOUSE_FN : RELATIVE_MOUSE_FN;
    return {
      keyboard: this.nodes[KEYBOARD_FN] ?? null,
      mouse: this.nodes[mouseFn] ?? null,
    };
  }

  onRebuilt(listener: () => void): () => void {
    this.rebuiltListeners.add(listener);
    return () => this.rebuiltListeners.delete(listener);
  }

  /** Awaited before the gadget is unbound or its functions removed (the HID closes its nodes). */
  onRebuilding(listener: () => Promise<void>): () => void {
    this.rebuildingListeners.add(listener);
    return () => this.rebuildingListeners.delete(listener);
  }

  mouseMode(): GadgetMouseMode {
    return this.settings.mouseMode;
  }

  setMouseMode(mode: GadgetMouseMode): Promise<void> {
    return this.queue.run(async () => {
      if (mode === this.settings.mouseMode) return;
      const other = mode === 'absolute' ? ABSOLUTE_MOUSE_FN : RELATIVE_MOUSE_FN;
      this.settings = { ...this.settings, mouseMode: mode };
      if (this.made.has(other)) {
        // enable_mouse_alt: both mice are there; only the node changes
        await this.emitRebuilding();
        this.emitRebuilt();
        return;
      }
      await this.rebuild(`mouse ${mode}`);
    });
  }

  setConnected(connected: boolean): Promise<void> {
    return this.queue.run(async () => {
      this.wantConnected = connected;
      if (connected && !this.boundUdc) {
        await this.bind();
        // the nodes are the kernel's anew after a bind: the HID opens them again
        if (this.boundUdc) this.emitRebuilt();
      }
      if (!connected && this.boundUdc) {
        await this.emitRebuilding();
        await this.unbind();
      }
      this.emitChange();
    });
  }

  connected(): boolean {
    return this.boundUdc !== null;
  }

  // ---- identity, functions, reinit (drivers/usb/gadget.ts) ----

  settingsNow(): GadgetSettings {
    return structuredClone(this.settings);
  }

  /** Takes new settings; rebuilds when the gadget they make differs from the one bound. */
  configure(change: Partial<Omit<GadgetSettings, 'mouseMode'>>): Promise<void> {
    return this.queue.run(async () => {
      const next: GadgetSettings = { ...this.settings, ...structuredClone(change) };
      if (sameSettings(next, this.settings)) {
        this.settings = next;
        return;
      }
      const functionsChanged =
        next.functions.start_cdrom !== this.settings.functions.start_cdrom ||
        next.functions.start_flash !== this.settings.functions.start_flash;
      this.settings = next;
      if (functionsChanged && !this.lun0) this.lun0Cdrom = this.startCdrom();
      await this.rebuild('settings');
    });
  }

  /** reinit_udc: the same gadget made again; the remote computer enumerates it anew. */
  reinit(): Promise<void> {
    return this.queue.run(() => this.rebuild('reinit'));
  }

  // ---- mass storage (drivers/msd/gadget.ts) ----

  /** The drive can take media: its function is made and the gadget bound. */
  msdOnline(): boolean {
    return this.made.has(MSD_FN) && this.boundUdc !== null;
  }

  /** Why there is no drive, or null. */
  msdProblem(): string | null {
    if (!this.made.has(MSD_FN)) {
      return (
        this.buildProblems.find((p) => /mass_storage|virtual media|gadget|configfs/i.test(p)) ??
        'The mass storage function was not made'
      );
    }
    if (!this.boundUdc) return this.udcProblem ?? 'The gadget is not bound to a UDC';
    return null;
  }

  /** lun.0 takes the image; the previous one, its type and its file stay if this fails. */
  lendImage(image: GadgetImage): Promise<void> {
    return this.queue.run(async () => {
      this.assertMsd();
      const lun = this.lunDir(0);
      const previous = this.lun0;
      const previousCdrom = this.lun0Cdrom;
      try {
        await this.eject(lun);
        await this.writeLun(lun, image.cdrom, image.cdrom || !image.rw, image.path);
      } catch (err) {
        await this.eject(lun).catch(() => undefined);
        await this.writeLun(
          lun,
          previous?.cdrom ?? previousCdrom,
          previous ? previous.cdrom || !previous.rw : previousCdrom,
          previous?.path ?? null,
        ).catch(() => undefined);
        throw new Error(`The drive did not take ${image.path}: ${(err as Error).message}`);
      }
      this.lun0 = { ...image };
      this.lun0Cdrom = image.cdrom;
      if (this.boundUdc && image.cdrom !== this.enumeratedCdrom) {
        // the remote computer reads the drive's type (INQUIRY) only when it enumerates it
        const started = performance.now();
        await this.emitRebuilding();
        try {
          await this.unbind();
          await this.bind();
          this.enumeratedCdrom = image.cdrom;
        } finally {
          this.emitRebuilt();
          // a bind that failed is in problems()
          this.emitChange();
        }
        this.log.info(
          { ms: Math.round(performance.now() - started), cdrom: image.cdrom },
          'gadget: drive type changed, enumerated again',
        );
      }
    });
  }

  ejectImage(): Promise<void> {
    return this.queue.run(async () => {
      if (this.made.has(MSD_FN)) await this.eject(this.lunDir(0));
      this.lun0 = null;
    });
  }

  /** lun.1 takes the board's block device, read-only. */
  lendPartition(device: string): Promise<void> {
    return this.queue.run(async () => {
      this.assertMsd();
      const lun = this.lunDir(1);
      try {
        await this.eject(lun);
        await this.fs.writeFile(join(lun, 'file'), device);
      } catch (err) {
        await this.eject(lun).catch(() => undefined);
        throw new Error(`The drive did not take ${device}: ${(err as Error).message}`);
      }
      this.lun1 = device;
    });
  }

  ejectPartition(): Promise<void> {
    return this.queue.run(async () => {
      if (this.made.has(MSD_FN)) await this.eject(this.lunDir(1));
      this.lun1 = null;
    });
  }

  /** What the LUNs hold (tests, the log bundle). */
  luns(): { image: GadgetImage | null; partition: string | null } {
    return { image: this.lun0 ? { ...this.lun0 } : null, partition: this.lun1 };
  }

  // ---- internals: start ----

  private startCdrom(): boolean {
    const f = this.settings.functions;
    return f.start_cdrom || !f.start_flash;
  }

  /** modprobe / mount configfs, as root and only when the programs exist; never fatal. */
  private async setup(): Promise<void> {
    const setup = this.opts.setup;
    if (!setup || !setup.root) return;
    if (await this.fs.exists(join(this.opts.configfs, 'usb_gadget'))) return;
    const program = async (name: string): Promise<string | null> => {
      for (const dir of ['/usr/sbin', '/sbin', '/usr/bin', '/bin']) {
        if (await this.fs.exists(join(dir, name))) return join(dir, name);
      }
      return null;
    };
    const modprobe = await program('modprobe');
    if (modprobe) {
      for (const mod of ['libcomposite', 'usb_f_hid', 'usb_f_mass_storage']) {
        await setup.run(modprobe, [mod], { timeoutMs: 10_000 }).catch((err: Error) => {
          this.log.warn({ module: mod, err: err.message }, 'gadget: modprobe failed');
        });
      }
    }
    if (await this.fs.exists(join(this.opts.configfs, 'usb_gadget'))) return;
    const mount = await program('mount');
    if (mount && (await listDir(this.fs, this.opts.configfs)).length === 0) {
      await setup
        .run(mount, ['-t', 'configfs', 'none', this.opts.configfs], { timeoutMs: 10_000 })
        .catch((err: Error) => {
          this.log.warn({ err: err.message }, 'gadget: mounting configfs failed');
        });
    }
  }

  // ---- internals: teardown and build ----

  /**
   * Removes the gadget folder, whatever a crash left in it: UDC "" → every configuration's
   * function links, its strings, itself → every function → the gadget's strings → the gadget.
   */
  private async teardown(): Promise<void> {
    const dir = this.gadgetDir;
    this.made = new Set();
    if (!(await this.fs.exists(dir))) {
      this.boundUdc = null;
      return;
    }
    const bound = await readAttr(this.fs, join(dir, 'UDC'));
    if (bound) {
      await this.fs.writeFile(join(dir, 'UDC'), '').then(
        () => {
          this.unboundAt = performance.now();
        },
        (err: Error) => {
          this.log.warn({ err: err.message }, 'gadget: unbinding the old gadget failed');
        },
      );
    }
    this.boundUdc = null;
    for (const config of await listDir(this.fs, join(dir, 'configs'))) {
      if (config.kind !== 'dir') continue;
      const cdir = join(dir, 'configs', config.name);
      for (const entry of await listDir(this.fs, cdir)) {
        if (entry.kind === 'link') await this.fs.unlink(join(cdir, entry.name));
      }
      for (const lang of await listDir(this.fs, join(cdir, 'strings'))) {
        if (lang.kind === 'dir') await removeGroup(this.fs, join(cdir, 'strings', lang.name));
      }
      await removeGroup(this.fs, cdir);
    }
    for (const entry of await listDir(this.fs, join(dir, 'os_desc'))) {
      if (entry.kind === 'link') await this.fs.unlink(join(dir, 'os_desc', entry.name));
    }
    for (const fn of await listDir(this.fs, join(dir, 'functions'))) {
      if (fn.kind === 'dir') await removeGroup(this.fs, join(dir, 'functions', fn.name));
    }
    for (const lang of await listDir(this.fs, join(dir, 'strings'))) {
      if (lang.kind === 'dir') await removeGroup(this.fs, join(dir, 'strings', lang.name));
    }
    await removeGroup(this.fs, dir);
  }

  /** teardown() that never throws: what is left is built over, and said in problems(). */
  private async safeTeardown(): Promise<void> {
    this.teardownProblem = null;
    try {
      await this.teardown();
    } catch (err) {
      this.teardownProblem = `The gadget left at ${this.gadgetDir} could not be removed: ${(err as Error).message}`;
      this.log.warn({ err: (err as Error).message }, 'gadget: teardown failed');
    }
  }

  /** Makes the gadget and every function it can, then binds; never throws. */
  private async build(): Promise<void> {
    const problems: string[] = [];
    this.made = new Set();
    this.nodes = {};
    const root = join(this.opts.configfs, 'usb_gadget');
    this.gadgetless = !(await this.fs.exists(root));
    if (this.gadgetless) {
      problems.push(
        (await listDir(this.fs, this.opts.configfs).catch(() => [])).length === 0
          ? `configfs is not mounted at ${this.opts.configfs}: no USB gadget can be made`
          : `Kernel module libcomposite is missing (${root} does not exist): no USB gadget can be made`,
      );
      this.buildProblems = problems;
      await this.findUdc();
      return;
    }
    const dir = this.gadgetDir;
    const s = this.settings;
    try {
      await this.fs.mkdir(dir);
      await this.fs.writeFile(join(dir, 'idVendor'), hex4(s.identity.vendorId));
      await this.fs.writeFile(join(dir, 'idProduct'), hex4(s.identity.productId));
      await this.fs.writeFile(join(dir, 'bcdDevice'), BCD_DEVICE);
      await this.fs.writeFile(join(dir, 'bcdUSB'), '0x0200');
      const strings = join(dir, 'strings', LANG);
      await this.fs.mkdir(strings);
      await this.fs.writeFile(join(strings, 'manufacturer'), s.identity.manufacturer);
      await this.fs.writeFile(join(strings, 'product'), s.identity.product);
      if (s.identity.serial !== '') {
        await this.fs.writeFile(join(strings, 'serialnumber'), s.identity.serial);
      }
      const config = join(dir, CONFIG);
      await this.fs.mkdir(join(config, 'strings', LANG));
      await this.fs.writeFile(join(config, 'MaxPower'), String(MAX_POWER_MA));
      await this.fs.writeFile(join(config, 'strings', LANG, 'configuration'), 'Config 1');
    } catch (err) {
      problems.push(`The USB gadget ${dir} could not be made: ${(err as Error).message}`);
      this.buildProblems = problems;
      await this.findUdc();
      return;
    }

    const missing = new Map<string, string[]>();
    const failed = async (fn: string, err: unknown): Promise<void> => {
      const type = fn.split('.')[0]!;
      const module = FUNCTION_MODULE[type]!;
      const code = errnoCode(err);
      const moduleGone = !(await this.fs.exists(join(this.opts.sys, 'module', module)));
      if (moduleGone && (code === 'ENOENT' || code === 'ENODEV' || code === 'EINVAL')) {
        missing.set(module, [...(missing.get(module) ?? []), FUNCTION_WHAT[fn]!]);
      } else {
        problems.push(
          `The function ${fn} could not be made (${FUNCTION_WHAT[fn]}): ${(err as Error).message}`,
        );
      }
      this.log.warn({ fn, err: (err as Error).message }, 'gadget: function not made');
    };

    const f = s.functions;
    const hid: Array<[string, HidFunctionSpec]> = [];
    if (f.enable_keyboard) hid.push([KEYBOARD_FN, this.opts.hid.keyboard]);
    if (f.enable_mouse) {
      if (f.enable_mouse_alt || s.mouseMode === 'absolute') {
        hid.push([ABSOLUTE_MOUSE_FN, this.opts.hid.absolute]);
      }
      if (f.enable_mouse_alt || s.mouseMode === 'relative') {
        hid.push([RELATIVE_MOUSE_FN, this.opts.hid.relative]);
      }
    }
    for (const [fn, spec] of hid) {
      try {
        await this.makeHid(fn, spec);
      } catch (err) {
        await failed(fn, err);
      }
    }
    try {
      await this.makeMsd();
    } catch (err) {
      await failed(MSD_FN, err);
    }
    for (const [module, what] of missing) {
      problems.push(`Kernel module ${module} is missing: ${what.join(', ')}`);
    }
    this.buildProblems = problems;
    if (this.wantConnected) await this.bind();
    else await this.findUdc();
  }

  private async makeHid(fn: string, spec: HidFunctionSpec): Promise<void> {
    const dir = join(this.gadgetDir, 'functions', fn);
    try {
      await this.fs.mkdir(dir);
      await this.fs.writeFile(join(dir, 'protocol'), String(spec.protocol));
      await this.fs.writeFile(join(dir, 'subclass'), String(spec.subclass));
      await this.fs.writeFile(join(dir, 'report_length'), String(spec.reportLength));
      await this.fs.writeFile(join(dir, 'report_desc'), spec.descriptor);
      await this.fs.symlink(dir, join(this.gadgetDir, CONFIG, fn));
    } catch (err) {
      await removeGroup(this.fs, dir).catch(() => undefined);
      throw err;
    }
    this.made.add(fn);
  }

  private async makeMsd(): Promise<void> {
    const dir = join(this.gadgetDir, 'functions', MSD_FN);
    try {
      await this.fs.mkdir(dir);
      // lun.0 comes with the function (mkdir -p of it changes nothing on configfs); lun.1 is
      // GL's partition drive
      await this.fs.mkdir(join(dir, 'lun.0'));
      await this.fs.mkdir(join(dir, 'lun.1'));
      const image = this.lun0;
      const cdrom = image ? image.cdrom : this.lun0Cdrom;
      await this.fs.writeFile(join(dir, 'lun.0', 'removable'), '1');
      await this.writeLun(
        join(dir, 'lun.0'),
        cdrom,
        image ? image.cdrom || !image.rw : cdrom,
        null,
      );
      await this.fs.writeFile(join(dir, 'lun.1', 'removable'), '1');
      await this.fs.writeFile(join(dir, 'lun.1', 'cdrom'), '0');
      await this.fs.writeFile(join(dir, 'lun.1', 'ro'), '1');
      await this.fs.writeFile(
        join(dir, 'lun.1', 'inquiry_string'),
        inquiryString(this.settings.inquiry.flash, false),
      );
      await this.fs.symlink(dir, join(this.gadgetDir, CONFIG, MSD_FN));
    } catch (err) {
      await removeGroup(this.fs, dir).catch(() => undefined);
      throw err;
    }
    this.made.add(MSD_FN);
    this.enumeratedCdrom = this.lun0 ? this.lun0.cdrom : this.lun0Cdrom;
    // what was lent before the rebuild is lent again (a file gone since is dropped, said)
    if (this.lun0) {
      await this.fs.writeFile(join(dir, 'lun.0', 'file'), this.lun0.path).catch((err: Error) => {
        this.log.warn({ path: this.lun0?.path, err: err.message }, 'gadget: image not lent again');
        this.lun0 = null;
      });
    }
    if (this.lun1) {
      await this.fs.writeFile(join(dir, 'lun.1', 'file'), this.lun1).catch((err: Error) => {
        this.log.warn({ device: this.lun1, err: err.message }, 'gadget: partition not lent again');
        this.lun1 = null;
      });
    }
  }

  private lunDir(n: 0 | 1): string {
    return join(this.gadgetDir, 'functions', MSD_FN, `lun.${n}`);
  }

  private assertMsd(): void {
    const problem = this.msdProblem();
    if (problem && !this.made.has(MSD_FN)) throw new Error(problem);
  }

  /** Type, read-only flag, INQUIRY and (if any) file; the kernel refuses the type while open. */
  private async writeLun(
    lun: string,
    cdrom: boolean,
    ro: boolean,
    file: string | null,
  ): Promise<void> {
    await this.fs.writeFile(join(lun, 'cdrom'), cdrom ? '1' : '0');
    await this.fs.writeFile(join(lun, 'ro'), ro ? '1' : '0');
    const vendor = cdrom ? this.settings.inquiry.cdrom : this.settings.inquiry.flash;
    await this.fs.writeFile(join(lun, 'inquiry_string'), inquiryString(vendor, cdrom));
    if (file !== null) await this.fs.writeFile(join(lun, 'file'), file);
  }

  /** Takes the medium out even if the remote computer locked it (forced_eject, kernel 5.9+). */
  private async eject(lun: string): Promise<void> {
    const file = await readAttr(this.fs, join(lun, 'file'));
    if (!file) return;
    try {
      await this.fs.writeFile(join(lun, 'forced_eject'), '1');
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
      await this.fs.writeFile(join(lun, 'file'), '');
    }
  }

  private async rebuild(reason: string): Promise<void> {
    await this.emitRebuilding();
    const started = performance.now();
    await this.safeTeardown();
    await this.build();
    const ms = Math.round(performance.now() - started);
    this.lastRebuildMs = ms;
    this.log.info(
      { ms, reason, functions: [...this.made], problems: this.buildProblems },
      `gadget rebuilt in ${ms} ms`,
    );
    this.emitRebuilt();
    this.emitChange();
  }

  // ---- internals: the UDC ----

  /** The UDC to use: the configured one, else the first; sets udcProblem. */
  private async findUdc(): Promise<string | null> {
    const classDir = join(this.opts.sys, 'class', 'udc');
    const names = (await listDir(this.fs, classDir).catch(() => [])).map((e) => e.name).sort();
    let name: string | null;
    if (this.opts.udc) {
      name = names.includes(this.opts.udc) ? this.opts.udc : null;
      this.udcProblem = name
        ? null
        : `USB device controller (UDC) ${this.opts.udc} is not in ${classDir}` +
          (names.length ? ` (there: ${names.join(', ')})` : '');
    } else {
      name = names[0] ?? null;
      this.udcProblem = name
        ? null
        : `No USB device controller (UDC) in ${classDir}: this board's USB port cannot act as a device`;
    }
    this.udcName = name ?? (this.opts.udc || null);
    return name;
  }

  private async bind(): Promise<void> {
    const name = await this.findUdc();
    if (!name || !(await this.fs.exists(this.gadgetDir))) return;
    if (this.made.size === 0) return;
    const gap = this.opts.rebindGapMs ?? REBIND_GAP_MS;
    if (this.unboundAt !== null) {
      const wait = this.unboundAt + gap - performance.now();
      if (wait > 0) await sleep(wait);
    }
    try {
      await this.fs.writeFile(join(this.gadgetDir, 'UDC'), name);
    } catch (err) {
      const hint = errnoCode(err) === 'EBUSY' ? ' (another gadget holds it)' : '';
      this.buildProblems = [
        ...this.buildProblems.filter((p) => !p.startsWith('The gadget could not be bound')),
        `The gadget could not be bound to ${name}${hint}: ${(err as Error).message}`,
      ];
      return;
    }
    this.buildProblems = this.buildProblems.filter(
      (p) => !p.startsWith('The gadget could not be bound'),
    );
    this.boundUdc = name;
    await this.resolveNodes();
  }

  private async unbind(): Promise<void> {
    if (!this.boundUdc) return;
    await this.fs.writeFile(join(this.gadgetDir, 'UDC'), '');
    this.unboundAt = performance.now();
    this.boundUdc = null;
  }

  /** `functions/hid.X/dev` ("maj:min") → `<sys>/dev/char/<maj:min>/uevent` DEVNAME → `<dev>/…`. */
  private async resolveNodes(): Promise<void> {
    const nodes: Record<string, string | null> = {};
    for (const fn of [KEYBOARD_FN, ABSOLUTE_MOUSE_FN, RELATIVE_MOUSE_FN]) {
      if (!this.made.has(fn)) continue;
      nodes[fn] = await this.resolveNode(fn);
    }
    this.nodes = nodes;
  }

  private async resolveNode(fn: string): Promise<string | null> {
    const devno = await readAttr(this.fs, join(this.gadgetDir, 'functions', fn, 'dev'));
    if (!devno || !/^\d+:\d+$/.test(devno)) {
      this.log.warn({ fn, dev: devno }, 'gadget: no device number');
      return null;
    }
    const deadline = performance.now() + (this.opts.nodeWaitMs ?? 2000);
    for (;;) {
      const uevent = await readAttr(this.fs, join(this.opts.sys, 'dev', 'char', devno, 'uevent'));
      const name = uevent ? /^DEVNAME=(.+)$/m.exec(uevent)?.[1] : undefined;
      if (name && !name.includes('..')) {
        const path = join(this.opts.dev, name);
        if (await this.fs.exists(path)) return path;
      }
      if (performance.now() >= deadline) {
        this.log.warn({ fn, devno, name }, 'gadget: the /dev node did not appear');
        return name ? join(this.opts.dev, name) : null;
      }
      await sleep(20);
    }
  }

  private schedulePoll(): void {
    if (this.disposed) return;
    this.poll = setTimeout(() => {
      void this.pollOnce().finally(() => this.schedulePoll());
    }, this.opts.udcPollMs);
    this.poll.unref?.();
  }

  /** One poll: the UDC's state; a UDC that appeared gets the gadget bound. */
  async pollOnce(): Promise<void> {
    if (this.polling || this.disposed) return;
    this.polling = true;
    try {
      if (
        this.gadgetless &&
        this.queue.pending === 0 &&
        (await this.fs.exists(join(this.opts.configfs, 'usb_gadget')))
      ) {
        // configfs mounted or libcomposite loaded after the start: make the gadget now
        await this.queue.run(() => this.rebuild('configfs appeared'));
      }
      if (!this.boundUdc && this.wantConnected && this.made.size > 0 && this.queue.pending === 0) {
        const before = this.udcProblem;
        const name = await this.findUdc();
        if (name) {
          await this.queue.run(async () => {
            if (!this.boundUdc && this.wantConnected) {
              await this.bind();
              if (this.boundUdc) this.emitRebuilt();
            }
          });
        }
        if (before !== this.udcProblem) this.emitChange();
      }
      await this.readUdcState();
    } finally {
      this.polling = false;
    }
  }

  private async readUdcState(): Promise<void> {
    const name = this.boundUdc ?? this.udcName;
    let state: UdcState = 'missing';
    if (name) {
      const text = await readAttr(this.fs, join(this.opts.sys, 'class', 'udc', name, 'state'));
      if (text !== null) state = text.trim() as UdcState;
    }
    if (state === this.state) return;
    this.state = state;
    for (const l of this.udcListeners) l(state);
    this.emitChange();
  }

  private async emitRebuilding(): Promise<void> {
    await Promise.allSettled([...this.rebuildingListeners].map((l) => l()));
  }

  private emitRebuilt(): void {
    for (const l of this.rebuiltListeners) l();
  }

  private emitChange(): void {
    for (const l of this.changeListeners) l();
  }
}
