/**
 * The gadget target's shared part: one composite USB gadget made through configfs
 * (`<configfs>/usb_gadget/<name>`, libcomposite; its layout: composite.ts) and bound to the
 * board's UDC (udc.ts). The HID driver sees it as a GadgetHidHost (types.ts), the MSD (luns.ts)
 * and USB identity drivers through the methods below; /api/info shows problems() and the UDC.
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
import { SILENT_LOGGER, type Logger } from '../../log';
import { SerialQueue } from '../../sync/serial-queue';
import {
  ABSOLUTE_MOUSE_FN,
  DEFAULT_GADGET_SETTINGS,
  hidFunctions,
  KEYBOARD_FN,
  makeGadget,
  makeHidFunction,
  makeUac2Function,
  MSD_FN,
  RELATIVE_MOUSE_FN,
  removeFunction,
  removeGadget,
  UAC2_FN,
  sameSettings,
  type GadgetImage,
  type GadgetSettings,
} from './composite';
import { NodeGadgetFs, readAttr, type GadgetFs } from './configfs';
import {
  BIND_PROBLEM,
  bindProblem,
  FunctionFailures,
  gadgetlessProblem,
  optionalDroppedProblem,
} from './problems';
import { GadgetLuns } from './luns';
import { setupGadgetKernel } from './setup';
import type { GadgetHidHost, GadgetHidNodes, GadgetMouseMode, UdcState } from './types';
import { REBIND_GAP_MS, type GadgetPlatformOptions, type GadgetUdcInfo } from './options';
import { findUdc, resolveHidNode, sleep } from './udc';
import { findUvcNode, makeUvcFunction, removeUvcFunction, uvcInterfaces, UVC_FN } from './uvc';

export { REBIND_GAP_MS, type GadgetPlatformOptions, type GadgetUdcInfo } from './options';

type Listener<T> = (value: T) => void;

/** Functions the gadget binds without when the UDC refuses it with them, in the order dropped. */
const OPTIONAL_FUNCTIONS: readonly string[] = [UVC_FN, UAC2_FN];

export {
  ABSOLUTE_MOUSE_FN,
  CONFIG,
  DEFAULT_GADGET_SETTINGS,
  inquiryString,
  KEYBOARD_FN,
  MSD_FN,
  RELATIVE_MOUSE_FN,
  UAC2_FN,
  type GadgetIdentity,
  type GadgetImage,
  type GadgetSettings,
} from './composite';

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
  /** The mass storage drives and what they hold. */
  private readonly drive: GadgetLuns;
  private lastRebuildMs: number | null = null;
  /** When this process last unbound the gadget (performance.now()). */
  private unboundAt: number | null = null;

  /** Why the webcam was taken out (dropCamera), null while it is wanted. */
  private uvcDropped: string | null = null;
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
    this.drive = new GadgetLuns(this.fs, this.log, () => this.settings.inquiry);
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
    this.drive.emptyCdrom = this.startCdrom();
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
    return [this.teardownProblem, ...this.buildProblems, this.uvcDropped, this.udcProblem].filter(
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
      if (functionsChanged && !this.drive.image) this.drive.emptyCdrom = this.startCdrom();
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
      await this.drive.lendImage(this.gadgetDir, image);
      if (this.boundUdc && image.cdrom !== this.drive.enumeratedCdrom) {
        // the remote computer reads the drive's type (INQUIRY) only when it enumerates it
        const started = performance.now();
        await this.emitRebuilding();
        try {
          await this.unbind();
          await this.bind();
          this.drive.enumeratedCdrom = image.cdrom;
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
    return this.queue.run(() => this.drive.ejectImage(this.gadgetDir, this.made.has(MSD_FN)));
  }

  /** lun.1 takes the board's block device, read-only. */
  lendPartition(device: string): Promise<void> {
    return this.queue.run(async () => {
      this.assertMsd();
      await this.drive.lendPartition(this.gadgetDir, device);
    });
  }

  ejectPartition(): Promise<void> {
    return this.queue.run(() => this.drive.ejectPartition(this.gadgetDir, this.made.has(MSD_FN)));
  }

  /** What the LUNs hold (tests, the log bundle). */
  luns(): { image: GadgetImage | null; partition: string | null } {
    const { image, partition } = this.drive;
    return { image: image ? { ...image } : null, partition };
  }

  // ---- sound (drivers/audio/alsa.ts) ----

  /** The UAC2 function is made and the gadget bound: the board's sound card exists. */
  soundOnline(): boolean {
    return this.made.has(UAC2_FN) && this.boundUdc !== null;
  }

  /** Why the gadget has no sound card now, or null. */
  soundProblem(): string | null {
    if (!this.opts.uac2) return 'The gadget has no sound function (gadget.uac2: false)';
    if (!this.made.has(UAC2_FN)) {
      return (
        this.buildProblems.find((p) => p.includes(UAC2_FN) || p.includes('usb_f_uac2')) ??
        this.buildProblems[0] ??
        'The sound function (UAC2) was not made'
      );
    }
    if (!this.boundUdc) return this.udcProblem ?? 'The gadget is not bound to a UDC';
    return null;
  }

  // ---- the webcam (services/camera) ----

  /** The UVC function is made and the gadget bound: the remote computer has our webcam. */
  cameraOnline(): boolean {
    return this.made.has(UVC_FN) && this.boundUdc !== null;
  }

  /** Why the gadget has no webcam now, or null. */
  cameraProblem(): string | null {
    if (!this.opts.uvc) return 'The gadget has no webcam function (gadget.uvc: false)';
    if (this.uvcDropped) return this.uvcDropped;
    if (!this.made.has(UVC_FN)) {
      return (
        this.buildProblems.find((p) => p.includes(UVC_FN) || p.includes('usb_f_uvc')) ??
        this.buildProblems[0] ??
        'The webcam function (UVC) was not made'
      );
    }
    if (!this.boundUdc) return this.udcProblem ?? 'The gadget is not bound to a UDC';
    return null;
  }

  /**
   * The webcam's frame server cannot run: the gadget is made again without the webcam, until the
   * next start. The kernel's UVC function keeps the whole gadget disconnected while no program
   * holds its video node open, so without this the keyboard and the drive would be gone too.
   */
  dropCamera(reason: string): Promise<void> {
    return this.queue.run(async () => {
      if (this.uvcDropped || !this.made.has(UVC_FN)) return;
      this.uvcDropped = `The function ${UVC_FN} was taken out (no webcam): ${reason}`;
      this.log.warn({ reason }, 'gadget: the webcam taken out');
      await this.rebuild('webcam taken out');
    });
  }

  /**
   * The webcam's video node and streaming interface number while it is online (the kernel
   * makes the node at bind), else null.
   */
  async cameraNode(): Promise<{ node: string; streamingInterface: number | null } | null> {
    const udc = this.boundUdc;
    if (!udc || !this.made.has(UVC_FN)) return null;
    const node = await findUvcNode(this.opts.sys, this.opts.dev, udc);
    if (!node) return null;
    const intf = await uvcInterfaces(this.fs, this.gadgetDir);
    return { node, streamingInterface: intf?.streaming ?? null };
  }

  // ---- internals: start ----

  private startCdrom(): boolean {
    const f = this.settings.functions;
    return f.start_cdrom || !f.start_flash;
  }

  /** modprobe / mount configfs, as root and only when the programs exist; never fatal. */
  private setup(): Promise<void> {
    return setupGadgetKernel(this.fs, this.opts.configfs, this.opts.setup, this.log);
  }

  // ---- internals: teardown and build ----

  /** Removes the gadget folder, whatever a crash left in it (composite.ts removeGadget). */
  private async teardown(): Promise<void> {
    this.made = new Set();
    this.boundUdc = null;
    await removeGadget(this.fs, this.gadgetDir, this.log, () => {
      this.unboundAt = performance.now();
    });
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
    this.made = new Set();
    this.nodes = {};
    this.gadgetless = !(await this.fs.exists(join(this.opts.configfs, 'usb_gadget')));
    if (this.gadgetless) {
      this.buildProblems = [await gadgetlessProblem(this.fs, this.opts.configfs)];
      await this.findUdc();
      return;
    }
    const dir = this.gadgetDir;
    try {
      await makeGadget(this.fs, dir, this.settings);
    } catch (err) {
      this.buildProblems = [`The USB gadget ${dir} could not be made: ${(err as Error).message}`];
      await this.findUdc();
      return;
    }

    const failures = new FunctionFailures(this.fs, this.opts.sys);
    const failed = async (fn: string, err: unknown): Promise<void> => {
      await failures.add(fn, err);
      this.log.warn({ fn, err: (err as Error).message }, 'gadget: function not made');
    };
    for (const [fn, spec] of hidFunctions(this.settings, this.opts.hid)) {
      try {
        await makeHidFunction(this.fs, dir, fn, spec);
        this.made.add(fn);
      } catch (err) {
        await failed(fn, err);
      }
    }
    try {
      await this.makeMsd();
    } catch (err) {
      await failed(MSD_FN, err);
    }
    if (this.opts.uac2) {
      try {
        await makeUac2Function(this.fs, dir, this.opts.uac2);
        this.made.add(UAC2_FN);
      } catch (err) {
        await failed(UAC2_FN, err);
      }
    }
    if (this.opts.uvc && !this.uvcDropped) {
      try {
        await makeUvcFunction(this.fs, dir, this.opts.uvc);
        this.made.add(UVC_FN);
      } catch (err) {
        await failed(UVC_FN, err);
      }
    }
    this.buildProblems = failures.problems();
    if (this.wantConnected) await this.bind();
    else await this.findUdc();
  }

  private async makeMsd(): Promise<void> {
    await this.drive.make(this.gadgetDir);
    this.made.add(MSD_FN);
  }

  private assertMsd(): void {
    const problem = this.msdProblem();
    if (problem && !this.made.has(MSD_FN)) throw new Error(problem);
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
    const found = await findUdc(this.fs, this.opts.sys, this.opts.udc);
    this.udcProblem = found.problem;
    this.udcName = found.shown;
    return found.name;
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
      // after its UDC went and came back, a kernel that kept the UDC's name binds by itself
      // (and refuses the name written again, EBUSY); one that cleared it waits for the write
      const current = await readAttr(this.fs, join(this.gadgetDir, 'UDC'));
      if (current !== name) await this.fs.writeFile(join(this.gadgetDir, 'UDC'), name);
    } catch (err) {
      if (await this.bindWithoutOptional(name, err)) return this.afterBind(name);
      this.buildProblems = [
        ...this.buildProblems.filter((p) => !p.startsWith(BIND_PROBLEM)),
        bindProblem(name, err),
      ];
      return;
    }
    await this.afterBind(name);
  }

  private async afterBind(name: string): Promise<void> {
    this.buildProblems = this.buildProblems.filter((p) => !p.startsWith(BIND_PROBLEM));
    this.boundUdc = name;
    await this.resolveNodes();
  }

  /**
   * The UDC refused the gadget: the functions it can do without (OPTIONAL_FUNCTIONS) are taken
   * out one at a time and the bind tried again; each one left out is said in problems(). True
   * when the gadget is bound now.
   */
  private async bindWithoutOptional(name: string, first: unknown): Promise<boolean> {
    let err = first;
    for (const fn of OPTIONAL_FUNCTIONS) {
      if (!this.made.has(fn)) continue;
      try {
        if (fn === UVC_FN) await removeUvcFunction(this.fs, this.gadgetDir);
        else await removeFunction(this.fs, this.gadgetDir, fn);
      } catch (removeErr) {
        this.log.warn({ fn, err: (removeErr as Error).message }, 'gadget: function not removed');
        return false;
      }
      this.made.delete(fn);
      this.buildProblems = [...this.buildProblems, optionalDroppedProblem(fn, name, err)];
      this.log.warn({ fn, udc: name, err: (err as Error).message }, 'gadget: bound without it');
      try {
        await this.fs.writeFile(join(this.gadgetDir, 'UDC'), name);
        return true;
      } catch (next) {
        err = next;
      }
    }
    return false;
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

  private resolveNode(fn: string): Promise<string | null> {
    const paths = { gadgetDir: this.gadgetDir, sys: this.opts.sys, dev: this.opts.dev };
    return resolveHidNode(this.fs, paths, fn, this.opts.nodeWaitMs ?? 2000, this.log);
  }

  private schedulePoll(): void {
    if (this.disposed) return;
    this.poll = setTimeout(() => {
      void this.pollOnce().finally(() => this.schedulePoll());
    }, this.opts.udcPollMs);
    this.poll.unref?.();
  }

  /**
   * One poll: the UDC's state; a UDC that appeared gets the gadget bound, one that went away
   * while bound (its driver unloaded, the controller reset) is said in problems() and the gadget
   * bound again when it is back.
   */
  async pollOnce(): Promise<void> {
    if (this.polling || this.disposed) return;
    this.polling = true;
    try {
      if (
        this.boundUdc &&
        this.queue.pending === 0 &&
        !(await this.fs.exists(join(this.opts.sys, 'class', 'udc', this.boundUdc)))
      ) {
        await this.queue.run(() => this.udcGone());
      }
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

  /** The bound UDC went away: the kernel unbound the gadget; the HID closes its nodes. */
  private async udcGone(): Promise<void> {
    const name = this.boundUdc;
    if (!name || (await this.fs.exists(join(this.opts.sys, 'class', 'udc', name)))) return;
    this.log.warn({ udc: name }, 'gadget: the UDC went away while bound');
    await this.emitRebuilding();
    this.boundUdc = null;
    this.unboundAt = performance.now();
    await this.findUdc();
    this.emitChange();
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
