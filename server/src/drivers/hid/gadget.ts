/**
 * Gadget HID: the keyboard and mouse of the board's USB gadget (platform/gadget), written as
 * HID reports to their `/dev/hidgN` (platform/gadget/hidg.ts, formats in reports.ts).
 *
 * Online means the UDC is `configured` (the host enumerated the gadget) and the keyboard's last
 * write did not time out (the mouse's when the gadget has no keyboard). `keyboard.online` and
 * `mouse.online` are each device's own. The keyboard decides because hosts often poll only it:
 * a BIOS reads boot keyboards but not our absolute mouse, and Linux polls a mouse only while
 * something holds its event node open (a text console does not), so a mouse that times out
 * there must not call a keyboard that works offline. The rules that keep keys from sticking:
 * - nothing is written while the UDC is not configured: presses are dropped (counted), and
 *   what was held is forgotten, the host having let go of it or going to be told so;
 * - a write that times out (the host stopped polling: asleep, a BIOS without USB legacy, cable
 *   out) makes that device offline; presses meanwhile are dropped, not replayed later;
 * - when the host is back (the UDC configured again, or a probe write every GADGET_PROBE_MS
 *   taken at once), the first report is the all-released one, then input flows again;
 * - after every rebuild (mouse mode, identity, functions) the nodes are opened again and the
 *   first report of each device is the all-released one.
 */
import { keyByCode, type MouseButton } from '@kvm/protocol';
import { ServiceUnavailableError } from '../../errors';
import type { Logger } from '../../log';
import {
  HidgTimeoutError,
  HidgUnboundError,
  openHidg,
  type HidReportEndpoint,
  type HidgOptions,
} from '../../platform/gadget/hidg';
import {
  KeyboardReport,
  MOUSE_BUTTON_BITS,
  absoluteMouseReport,
  keyboardReleaseReport,
  parseLedReport,
  relativeMouseReport,
  toUsbAbsolute,
} from '../../platform/gadget/reports';
import type { GadgetHidHost, GadgetMouseMode, UdcState } from '../../platform/gadget/types';
import { paceKeyEvents } from './pace';
import type { HidDriver, HidDriverState, KeyEvent } from './types';
import { LatencyRing, type LatencySummary } from './write-latency';

/**
 * Paste pace floor, start to start. f_hid holds one report until the host's next poll and the
 * endpoint retries EAGAIN every 2 ms, so the write itself waits for the host (1 ms polls at
 * high speed, bInterval 4; 10 ms at full speed) and nothing is lost at any pace; the floor only
 * keeps a paste from spinning on EAGAIN.
 */
export const GADGET_KEY_GAP_MS = 2;
/** While a device is offline after a time-out, one write attempt of its release-all this often. */
export const GADGET_PROBE_MS = 250;
/** A node the gadget has but that could not be opened is tried again this often. */
export const GADGET_REOPEN_MS = 1000;
/**
 * After onRebuilding, the nodes are opened again on onRebuilt; a rebuild that failed before
 * calling it must not leave the board without a keyboard, so past this the driver opens
 * whatever nodes there are (unless the gadget is unplugged: then they wait for the plug).
 */
export const GADGET_REBUILD_WAIT_MS = 30_000;

const OUTPUTS: Readonly<Record<GadgetMouseMode, string>> = { absolute: 'usb', relative: 'usb_rel' };

/** 503: a paste was typed while the remote computer takes no USB input. */
export class GadgetHidOfflineError extends ServiceUnavailableError {}

export interface GadgetHidOptions {
  log: Logger;
  writeTimeoutMs: number;
  /** How a node is opened: openHidg, or an in-memory endpoint in tests. */
  openEndpoint?: (path: string, opts: HidgOptions) => Promise<HidReportEndpoint>;
  /** GADGET_REBUILD_WAIT_MS unless given (tests). */
  rebuildWaitMs?: number;
}

interface Channel {
  readonly kind: 'keyboard' | 'mouse';
  ep: HidReportEndpoint | null;
  offOutput: (() => void) | null;
  /** The last write timed out or found the function unbound: offline until the host is back. */
  stalled: boolean;
  /** The host may hold what we no longer track: the next report must release everything. */
  needsReset: boolean;
  probing: boolean;
}

export class GadgetHid implements HidDriver {
  readonly name = 'gadget';
  private udc: UdcState = 'missing';
  private readonly keyboard: Channel = channel('keyboard');
  private readonly mouse: Channel = channel('mouse');
  private readonly keys = new KeyboardReport();
  private buttons = 0;
  /** The absolute pointer's position (0..32767): every absolute report repeats it. */
  private absX = toUsbAbsolute(0);
  private absY = toUsbAbsolute(0);
  /** The mode of the mouse node open now (the host's may already be the next one). */
  private openMode: GadgetMouseMode = 'absolute';
  private leds = { caps: false, num: false, scroll: false };
  /** Reports dropped: presses and moves while offline or queued too deep. */
  droppedReports = 0;
  /**
   * sendKey's call to the kernel taking its report (the write's completion), the last 1024 in
   * seconds: the share of a key's latency spent in this server (/api/export/prometheus/metrics
   * `kvm_hid_gadget_write_seconds`). Keys not written (offline, dropped, no change) are not in it.
   */
  private readonly keyWrites = new LatencyRing(1024);
  private readonly stateListeners = new Set<(state: HidDriverState) => void>();
  private readonly offHost: Array<() => void> = [];
  private probeTimer: NodeJS.Timeout | null = null;
  private openRetry: NodeJS.Timeout | null = null;
  private rebuildWait: NodeJS.Timeout | null = null;
  /** Nodes whose open failed and was logged: the retries stay quiet until one opens. */
  private readonly openFailLogged = new Set<string>();
  /** Opening and closing the nodes, one after the other. */
  private reopening: Promise<void> = Promise.resolve();
  /** Between closing the nodes for a rebuild and opening the new ones. */
  private closedForRebuild = false;
  private disposed = false;
  private lastStateJson = '';

  constructor(
    private readonly host: GadgetHidHost,
    private readonly opts: GadgetHidOptions,
  ) {}

  async init(): Promise<void> {
    this.udc = this.host.udcState();
    this.offHost.push(
      this.host.onUdcState((state) => this.onUdc(state)),
      this.host.onRebuilt(() => void this.reopen()),
    );
    if (this.host.onRebuilding) {
      this.offHost.push(this.host.onRebuilding(() => this.closeForRebuild()));
    }
    await this.reopen();
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    for (const off of this.offHost.splice(0)) off();
    this.stopProbe();
    if (this.openRetry) clearTimeout(this.openRetry);
    if (this.rebuildWait) clearTimeout(this.rebuildWait);
    await this.schedule(() => this.closeAll());
  }

  getState(): HidDriverState {
    const configured = this.udc === 'configured';
    const primary = this.keyboard.ep || !this.mouse.ep ? this.keyboard : this.mouse;
    const mode = this.host.mouseMode();
    return {
      enabled: true,
      online: configured && !primary.stalled,
      connected: this.host.connected(),
      keyboard: {
        online: this.sendable(this.keyboard),
        leds: { ...this.leds },
        outputs: { available: [], active: '' },
      },
      mouse: {
        online: this.sendable(this.mouse),
        absolute: mode === 'absolute',
        outputs: { available: [OUTPUTS.absolute, OUTPUTS.relative], active: OUTPUTS[mode] },
      },
    };
  }

  onState(listener: (state: HidDriverState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  // ---- keyboard ----

  sendKey(key: string, pressed: boolean): void {
    const started = performance.now();
    void this.keyTransition(key, pressed, false, started).catch(() => undefined);
  }

  keyWriteLatency(): LatencySummary {
    return this.keyWrites.summary();
  }

  typeSequence(events: Iterable<KeyEvent>, delayMs: number, signal: AbortSignal): Promise<void> {
    return paceKeyEvents(
      (function* () {
        for (const e of events) if (keyByCode(e.key)) yield e;
      })(),
      Math.max(delayMs, GADGET_KEY_GAP_MS),
      signal,
      (key, pressed) => this.keyTransition(key, pressed, true),
    );
  }

  /**
   * One key transition as a report. `strict` (paste): waits for the kernel to take it, and
   * rejects when the keyboard is offline or the write fails, so the paste stops.
   */
  private async keyTransition(
    key: string,
    pressed: boolean,
    strict: boolean,
    started?: number,
  ): Promise<void> {
    const info = keyByCode(key);
    if (!info) return;
    const ch = this.keyboard;
    if (!this.sendable(ch)) {
      if (pressed) this.droppedReports++;
      if (strict) throw this.offlineError();
      return;
    }
    if (pressed) {
      if (this.keys.has(info.usb)) return;
      if (!strict && ch.ep!.full) {
        this.droppedReports++;
        return;
      }
      // A seventh key waits for a free slot (reports.ts): no report yet.
      if (!this.keys.press(info.usb)) return;
    } else if (!this.keys.release(info.usb)) {
      return;
    }
    const written = this.submit(ch, this.keys.encode(), strict || !pressed);
    if (started !== undefined) {
      void written.then((ok) => {
        if (ok) this.keyWrites.record((performance.now() - started) / 1000);
      });
    }
    if (strict && !(await written)) throw this.offlineError();
  }

  // ---- mouse ----

  sendMouseButton(button: MouseButton, pressed: boolean): void {
    const ch = this.mouse;
    const bit = MOUSE_BUTTON_BITS[button];
    if (!this.sendable(ch)) {
      if (pressed) this.droppedReports++;
      return;
    }
    if (pressed) {
      if (this.buttons & bit) return;
      if (ch.ep!.full) {
        this.droppedReports++;
        return;
      }
      this.buttons |= bit;
    } else {
      if (!(this.buttons & bit)) return;
      this.buttons &= ~bit;
    }
    void this.submit(ch, this.mouseReport(), !pressed);
  }

  sendMouseMove(x: number, y: number): void {
    if (this.openMode !== 'absolute') return;
    this.absX = toUsbAbsolute(x);
    this.absY = toUsbAbsolute(y);
    if (this.canQueue(this.mouse)) void this.submit(this.mouse, this.mouseReport(), false);
  }

  sendMouseRelative(dx: number, dy: number): void {
    if (this.openMode !== 'relative' || !this.canQueue(this.mouse)) return;
    void this.submit(this.mouse, relativeMouseReport(this.buttons, dx, dy), false);
  }

  sendMouseWheel(dx: number, dy: number): void {
    if (!this.canQueue(this.mouse)) return;
    void this.submit(this.mouse, this.mouseReport(dy, dx), false);
  }

  async setMouseOutput(output: string): Promise<void> {
    const mode = (Object.keys(OUTPUTS) as GadgetMouseMode[]).find((m) => OUTPUTS[m] === output);
    if (!mode) throw new Error(`unknown mouse output ${output}`);
    if (mode === this.host.mouseMode()) return;
    // Buttons held on the old mouse would never be released on the new one.
    if (this.buttons !== 0 && this.sendable(this.mouse)) {
      this.buttons = 0;
      await this.submit(this.mouse, this.mouseReport(), true);
    }
    this.buttons = 0;
    // A platform without onRebuilding: close the nodes here, before the functions go away.
    const closeHere = !this.host.onRebuilding;
    if (closeHere) await this.closeForRebuild();
    try {
      await this.host.setMouseMode(mode);
    } finally {
      // onRebuilt reopens them (queued behind the close); a switch that failed half-way may not
      // have called it: then open whatever nodes there are now.
      await this.reopening;
      if (this.closedForRebuild) await this.reopen();
      this.notify();
    }
  }

  async setConnected(connected: boolean): Promise<void> {
    try {
      await this.host.setConnected(connected);
    } finally {
      this.notify();
    }
  }

  // ---- internals: sending ----

  private sendable(ch: Channel): boolean {
    return this.udc === 'configured' && ch.ep !== null && !ch.stalled && !this.closedForRebuild;
  }

  /** For pointer reports, which may be dropped: sendable and room in the queue. */
  private canQueue(ch: Channel): boolean {
    if (this.sendable(ch) && !ch.ep!.full) return true;
    this.droppedReports++;
    return false;
  }

  private releaseReport(ch: Channel): Uint8Array {
    if (ch.kind === 'keyboard') return keyboardReleaseReport();
    return this.openMode === 'absolute'
      ? absoluteMouseReport(0, this.absX, this.absY)
      : relativeMouseReport(0, 0, 0);
  }

  /** The mouse's report now: buttons, the absolute position or no move, and a wheel step. */
  private mouseReport(wheel = 0, pan = 0): Uint8Array {
    return this.openMode === 'absolute'
      ? absoluteMouseReport(this.buttons, this.absX, this.absY, wheel, pan)
      : relativeMouseReport(this.buttons, 0, 0, wheel, pan);
  }

  /**
   * Queues a report, after the release-all when one is owed. Resolves whether the kernel took
   * it; a failed write takes the device offline.
   */
  private submit(ch: Channel, report: Uint8Array, essential: boolean): Promise<boolean> {
    if (ch.needsReset) {
      ch.needsReset = false;
      void this.post(ch, this.releaseReport(ch), true);
    }
    return this.post(ch, report, essential);
  }

  private post(ch: Channel, report: Uint8Array, essential: boolean): Promise<boolean> {
    const ep = ch.ep;
    if (!ep) return Promise.resolve(false);
    return ep.write(report, { essential }).catch((err: unknown) => {
      if (ch.ep === ep) this.offline(ch, err);
      return false;
    });
  }

  /** The host stopped taking this device's reports: offline until it is back. */
  private offline(ch: Channel, err: unknown): void {
    if (!(err instanceof HidgTimeoutError) && !(err instanceof HidgUnboundError)) {
      this.opts.log.warn(
        { err: (err as Error).message, device: ch.kind },
        'gadget hid: write failed',
      );
    }
    if (!ch.stalled) {
      this.opts.log.info(
        { device: ch.kind, reason: (err as Error).message },
        'gadget hid: the host takes no reports; offline until it polls again',
      );
    }
    ch.stalled = true;
    this.forget(ch);
    this.notify();
    this.startProbe();
  }

  /** Forgets what the device holds; its next report will be the release-all. */
  private forget(ch: Channel): void {
    if (ch.kind === 'keyboard') this.keys.clear();
    else this.buttons = 0;
    ch.needsReset = true;
  }

  private startProbe(): void {
    if (this.probeTimer || this.disposed) return;
    this.probeTimer = setInterval(() => this.probe(), GADGET_PROBE_MS);
    this.probeTimer.unref();
  }

  private stopProbe(): void {
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.probeTimer = null;
  }

  /** One write attempt of each stalled device's release-all: taken = the host is back. */
  private probe(): void {
    const stalled = [this.keyboard, this.mouse].filter((ch) => ch.stalled);
    if (stalled.length === 0) {
      this.stopProbe();
      return;
    }
    if (this.udc !== 'configured' || this.closedForRebuild) return;
    for (const ch of stalled) {
      const ep = ch.ep;
      if (!ep || ch.probing) continue;
      ch.probing = true;
      void ep
        .write(this.releaseReport(ch), { essential: true, timeoutMs: 0 })
        .catch(() => false)
        .then((taken) => {
          ch.probing = false;
          if (!taken || ch.ep !== ep || !ch.stalled) return;
          ch.stalled = false;
          ch.needsReset = false;
          this.opts.log.info({ device: ch.kind }, 'gadget hid: the host takes reports again');
          this.notify();
        });
    }
  }

  // ---- internals: the UDC and the nodes ----

  private onUdc(state: UdcState): void {
    const was = this.udc;
    this.udc = state;
    if (state === was) return;
    if (state !== 'configured') {
      // The host let go (or will be told): what was held is not replayed.
      this.forget(this.keyboard);
      this.forget(this.mouse);
    } else {
      // Back: the release-all goes first, input queues behind it; a failure is a new time-out.
      for (const ch of [this.keyboard, this.mouse]) {
        if (!ch.ep) continue;
        ch.stalled = false;
        ch.needsReset = false;
        void this.post(ch, this.releaseReport(ch), true);
      }
    }
    this.notify();
  }

  /** Runs node opens and closes one after the other. */
  private schedule(fn: () => Promise<void>): Promise<void> {
    const next = this.reopening.then(fn, fn);
    this.reopening = next.catch(() => undefined);
    return next;
  }

  private closeForRebuild(): Promise<void> {
    this.closedForRebuild = true;
    this.notify();
    if (this.rebuildWait) clearTimeout(this.rebuildWait);
    this.rebuildWait = setTimeout(() => {
      this.rebuildWait = null;
      if (!this.closedForRebuild || this.disposed || !this.host.connected()) return;
      this.opts.log.warn({}, 'gadget hid: no rebuild finished; opening the nodes there are');
      void this.reopen();
    }, this.opts.rebuildWaitMs ?? GADGET_REBUILD_WAIT_MS);
    this.rebuildWait.unref();
    return this.schedule(() => this.closeAll());
  }

  private async closeAll(): Promise<void> {
    for (const ch of [this.keyboard, this.mouse]) {
      const ep = ch.ep;
      ch.ep = null;
      ch.offOutput?.();
      ch.offOutput = null;
      this.forget(ch);
      if (ep) await ep.close();
    }
  }

  /** Closes the nodes and opens the gadget's current ones (after init and every rebuild). */
  private reopen(): Promise<void> {
    return this.schedule(async () => {
      await this.closeAll();
      if (this.disposed) return;
      if (this.rebuildWait) clearTimeout(this.rebuildWait);
      this.rebuildWait = null;
      const nodes = this.host.hidNodes();
      this.openMode = this.host.mouseMode();
      // The LEDs stay: a node swap (enable_mouse_alt) leaves the host's keyboard as it was, and a
      // host that enumerates the new gadget sets them again (Linux does at once: measured).
      await this.open(this.keyboard, nodes.keyboard);
      await this.open(this.mouse, nodes.mouse);
      this.closedForRebuild = false;
      this.afterOpen([this.keyboard, this.mouse]);
    });
  }

  /** Each device opened starts with its release-all when the host is there; missing ones retry. */
  private afterOpen(opened: Channel[]): void {
    if (this.udc === 'configured') {
      for (const ch of opened) {
        if (!ch.ep) continue;
        ch.needsReset = false;
        void this.post(ch, this.releaseReport(ch), true);
      }
    }
    this.notify();
    const nodes = this.host.hidNodes();
    const missing = !!(nodes.keyboard && !this.keyboard.ep) || !!(nodes.mouse && !this.mouse.ep);
    if (missing && !this.openRetry && !this.disposed) {
      this.openRetry = setTimeout(() => {
        this.openRetry = null;
        void this.schedule(() => this.openMissing());
      }, GADGET_REOPEN_MS);
      this.openRetry.unref();
    }
  }

  /** Opens the nodes that failed to open (a transient error must not leave the board without them). */
  private async openMissing(): Promise<void> {
    if (this.disposed || this.closedForRebuild) return;
    const nodes = this.host.hidNodes();
    const opened: Channel[] = [];
    for (const ch of [this.keyboard, this.mouse]) {
      const path = nodes[ch.kind];
      if (ch.ep || !path) continue;
      await this.open(ch, path);
      if (ch.ep) opened.push(ch);
    }
    this.afterOpen(opened);
  }

  private async open(ch: Channel, path: string | null): Promise<void> {
    ch.stalled = false;
    ch.needsReset = true;
    if (!path) return;
    const open = this.opts.openEndpoint ?? openHidg;
    try {
      const ep = await open(path, {
        writeTimeoutMs: this.opts.writeTimeoutMs,
        // the keyboard's LEDs; the mice have no output report
        outputReportLength: ch.kind === 'keyboard' ? 1 : 0,
        log: this.opts.log,
      });
      if (this.disposed) {
        await ep.close();
        return;
      }
      ch.ep = ep;
      this.openFailLogged.delete(path);
      if (ch.kind === 'keyboard') ch.offOutput = ep.onOutput((report) => this.onLeds(report));
    } catch (err) {
      // Tried again every GADGET_REOPEN_MS: said once, then quietly.
      const first = !this.openFailLogged.has(path);
      this.openFailLogged.add(path);
      this.opts.log[first ? 'warn' : 'debug'](
        { err: (err as Error).message, path, device: ch.kind },
        'gadget hid: cannot open the HID node',
      );
    }
  }

  private onLeds(report: Uint8Array): void {
    const leds = parseLedReport(report);
    if (!leds) return;
    this.leds = { caps: leds.caps, num: leds.num, scroll: leds.scroll };
    this.notify();
  }

  private offlineError(): GadgetHidOfflineError {
    return new GadgetHidOfflineError(
      this.udc === 'configured'
        ? 'The remote computer is not taking USB keyboard reports'
        : `The remote computer is not taking USB input (UDC state: ${this.udc})`,
    );
  }

  private notify(): void {
    const state = this.getState();
    const json = JSON.stringify(state);
    if (json === this.lastStateJson) return;
    this.lastStateJson = json;
    for (const l of this.stateListeners) l(state);
  }
}

function channel(kind: Channel['kind']): Channel {
  return { kind, ep: null, offOutput: null, stalled: false, needsReset: true, probing: false };
}
