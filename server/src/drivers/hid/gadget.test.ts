import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SILENT_LOGGER, type Logger } from '../../log';
import { HidgTimeoutError, type HidReportEndpoint } from '../../platform/gadget/hidg';
import type {
  GadgetHidHost,
  GadgetHidNodes,
  GadgetMouseMode,
  UdcState,
} from '../../platform/gadget/types';
import { GADGET_PROBE_MS, GADGET_REOPEN_MS, GadgetHid, GadgetHidOfflineError } from './gadget';
import type { HidDriverState } from './types';

/** An in-memory hidg node: records every report taken, in order, as hex. */
class FakeEndpoint implements HidReportEndpoint {
  readonly written: string[] = [];
  /** The host stopped polling: writes time out (at once here), probes too. */
  stalled = false;
  full = false;
  dropped = 0;
  closed = false;
  /** While set, writes wait for it (the kernel has not taken the report yet). */
  gate: Promise<void> | null = null;
  private readonly listeners = new Set<(r: Uint8Array) => void>();
  constructor(readonly path: string) {}
  get queued(): number {
    return 0;
  }
  async write(report: Uint8Array): Promise<boolean> {
    await (this.gate ?? Promise.resolve());
    if (this.closed) return false;
    if (this.stalled) throw new HidgTimeoutError(this.path, 0);
    this.written.push(Buffer.from(report).toString('hex'));
    return true;
  }
  onOutput(listener: (r: Uint8Array) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  /** The host sets its LEDs. */
  output(byte: number): void {
    for (const l of this.listeners) l(Uint8Array.of(byte));
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

class FakeHost implements GadgetHidHost {
  state: UdcState = 'configured';
  mode: GadgetMouseMode = 'absolute';
  plugged = true;
  /** Node names change with every rebuild, as a re-made gadget's may. */
  generation = 0;
  /** The next switch fails after the functions were taken down, without a rebuilt call. */
  failSwitch = false;
  readonly calls: string[] = [];
  private readonly udcListeners = new Set<(s: UdcState) => void>();
  private readonly rebuiltListeners = new Set<() => void>();
  private readonly rebuildingListeners = new Set<() => Promise<void>>();
  udcState(): UdcState {
    return this.state;
  }
  onUdcState(listener: (s: UdcState) => void): () => void {
    this.udcListeners.add(listener);
    return () => this.udcListeners.delete(listener);
  }
  setUdc(state: UdcState): void {
    this.state = state;
    for (const l of this.udcListeners) l(state);
  }
  hidNodes(): GadgetHidNodes {
    return { keyboard: `kbd.${this.generation}`, mouse: `${this.mode}.${this.generation}` };
  }
  onRebuilt(listener: () => void): () => void {
    this.rebuiltListeners.add(listener);
    return () => this.rebuiltListeners.delete(listener);
  }
  onRebuilding(listener: () => Promise<void>): () => void {
    this.rebuildingListeners.add(listener);
    return () => this.rebuildingListeners.delete(listener);
  }
  mouseMode(): GadgetMouseMode {
    return this.mode;
  }
  async setMouseMode(mode: GadgetMouseMode): Promise<void> {
    this.calls.push(`setMouseMode ${mode}`);
    for (const l of this.rebuildingListeners) await l();
    if (this.failSwitch) throw new Error('configfs: write failed');
    this.mode = mode;
    this.generation++;
    for (const l of this.rebuiltListeners) l();
  }
  async setConnected(connected: boolean): Promise<void> {
    this.calls.push(`setConnected ${connected}`);
    this.plugged = connected;
  }
  connected(): boolean {
    return this.plugged;
  }
}

async function waitFor<T>(fn: () => T | undefined | null | false, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const drivers: GadgetHid[] = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) await d.dispose();
});

/** Records what the driver logs, by level. */
function recorder(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (_obj: object, msg?: string) => lines.push(`${level} ${msg}`);
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}

async function setup(
  host = new FakeHost(),
  failOpens = new Map<string, number>(),
  extra: { log?: Logger; rebuildWaitMs?: number } = {},
) {
  const endpoints = new Map<string, FakeEndpoint>();
  const opened: string[] = [];
  const hid = new GadgetHid(host, {
    log: extra.log ?? SILENT_LOGGER,
    writeTimeoutMs: 100,
    rebuildWaitMs: extra.rebuildWaitMs,
    openEndpoint: async (path) => {
      const fails = failOpens.get(path) ?? 0;
      if (fails > 0) {
        failOpens.set(path, fails - 1);
        throw new Error(`EBUSY: ${path}`);
      }
      opened.push(path);
      const ep = new FakeEndpoint(path);
      endpoints.set(path, ep);
      return ep;
    },
  });
  drivers.push(hid);
  const states: HidDriverState[] = [];
  hid.onState((s) => states.push(s));
  await hid.init();
  const ep = (path: string): FakeEndpoint => endpoints.get(path)!;
  /** Lets the writes queued so far settle. */
  const settle = () => new Promise((r) => setTimeout(r, 0));
  await settle();
  return { hid, host, ep, opened, states, settle };
}

const RELEASED = '0000000000000000';

describe('GadgetHid keyboard', () => {
  it('starts each device with its release-all report, then one report per key transition', async () => {
    const { hid, ep, settle } = await setup();
    expect(ep('kbd.0').written).toEqual([RELEASED]);
    // The absolute mouse's release repeats the centre position.
    expect(ep('absolute.0').written).toEqual(['00004000400000']);
    hid.sendKey('KeyA', true);
    hid.sendKey('ShiftLeft', true);
    hid.sendKey('KeyA', true); // already down: nothing
    hid.sendKey('NoSuchKey', true);
    hid.sendKey('KeyA', false);
    hid.sendKey('ShiftLeft', false);
    hid.sendKey('ShiftLeft', false); // not down: nothing
    await settle();
    expect(ep('kbd.0').written.slice(1)).toEqual([
      '0000040000000000',
      '0200040000000000',
      '0200000000000000',
      RELEASED,
    ]);
    expect(hid.getState().keyboard.online).toBe(true);
  });

  it('records sendKey to the completed write of its report, only for reports written', async () => {
    const { hid, host, ep, settle } = await setup();
    expect(hid.keyWriteLatency()).toMatchObject({ count: 0, quantiles: [] });
    let open!: () => void;
    ep('kbd.0').gate = new Promise<void>((r) => (open = r));
    hid.sendKey('KeyA', true);
    await new Promise((r) => setTimeout(r, 30));
    // the kernel has not taken it: no duration yet
    expect(hid.keyWriteLatency().count).toBe(0);
    open();
    await settle();
    const one = hid.keyWriteLatency();
    expect(one.count).toBe(1);
    // from the call, so the 30 ms the write waited are in it
    expect(one.quantiles[0]!.value).toBeGreaterThanOrEqual(0.025);
    ep('kbd.0').gate = null;
    hid.sendKey('KeyA', false);
    hid.sendKey('KeyA', false); // no change: no report, no duration
    await settle();
    expect(hid.keyWriteLatency().count).toBe(2);
    // offline: presses are dropped and not counted
    host.setUdc('not attached');
    hid.sendKey('KeyB', true);
    await settle();
    expect(hid.keyWriteLatency().count).toBe(2);
    // a paste is not a sendKey
    host.setUdc('configured');
    await hid.typeSequence([{ key: 'KeyC', state: true }], 0, new AbortController().signal);
    await settle();
    expect(hid.keyWriteLatency().count).toBe(2);
  });

  it('holds six keys and the modifiers; a seventh takes the first slot that frees', async () => {
    const { hid, ep, settle } = await setup();
    hid.sendKey('ControlLeft', true);
    hid.sendKey('AltRight', true);
    for (const k of ['KeyA', 'KeyB', 'KeyC', 'KeyD', 'KeyE', 'KeyF', 'KeyG']) hid.sendKey(k, true);
    await settle();
    const w = ep('kbd.0').written;
    expect(w.at(-1)).toBe('4100040506070809');
    expect(w).toHaveLength(1 + 2 + 6); // the seventh made no report
    hid.sendKey('KeyB', false);
    await settle();
    expect(w.at(-1)).toBe('41000406070809' + '0a');
    hid.sendKey('KeyG', false);
    await settle();
    expect(w.at(-1)).toBe('4100040607080900');
  });

  it('opens again a node that failed to open, starting it with its release-all', async () => {
    const log = recorder();
    const { hid, ep, opened } = await setup(new FakeHost(), new Map([['kbd.0', 2]]), { log });
    expect(opened).toEqual(['absolute.0']);
    expect(hid.getState().keyboard.online).toBe(false);
    await waitFor(() => hid.getState().keyboard.online, GADGET_REOPEN_MS * 8);
    expect(opened).toEqual(['absolute.0', 'kbd.0']);
    // Said once, then retried quietly.
    const opens = log.lines.filter((l) => l.endsWith('cannot open the HID node'));
    expect(opens).toEqual([
      'warn gadget hid: cannot open the HID node',
      'debug gadget hid: cannot open the HID node',
    ]);
    await waitFor(() => ep('kbd.0').written.length > 0);
    expect(ep('kbd.0').written).toEqual([RELEASED]);
    expect(ep('absolute.0').written).toHaveLength(1);
  });

  it('passes the LED output report to getState().keyboard.leds, telling the change', async () => {
    const { hid, ep, states } = await setup();
    expect(hid.getState().keyboard.leds).toEqual({ caps: false, num: false, scroll: false });
    const before = states.length;
    ep('kbd.0').output(0x02 | 0x01);
    expect(hid.getState().keyboard.leds).toEqual({ caps: true, num: true, scroll: false });
    expect(states.length).toBe(before + 1);
    expect(states.at(-1)!.keyboard.leds.caps).toBe(true);
    ep('kbd.0').output(0x04);
    expect(hid.getState().keyboard.leds).toEqual({ caps: false, num: false, scroll: true });
  });

  it('on a time-out goes offline, drops presses, and releases everything first on return', async () => {
    const { hid, ep, settle, states } = await setup();
    const kbd = ep('kbd.0');
    hid.sendKey('KeyA', true);
    await settle();
    kbd.stalled = true;
    hid.sendKey('KeyB', true); // times out: the host stopped polling
    await waitFor(() => !hid.getState().online);
    expect(hid.getState().keyboard.online).toBe(false);
    expect(hid.getState().mouse.online).toBe(true);
    expect(states.at(-1)!.online).toBe(false);
    hid.sendKey('KeyC', true); // pressed while offline: never replayed
    hid.sendKey('KeyA', false);
    const before = kbd.written.length;
    kbd.stalled = false; // the host polls again
    await waitFor(() => hid.getState().online, GADGET_PROBE_MS * 20);
    expect(kbd.written.slice(before)).toEqual([RELEASED]);
    hid.sendKey('KeyD', true);
    await settle();
    expect(kbd.written.slice(before)).toEqual([RELEASED, '0000070000000000']);
    expect(kbd.written.join()).not.toContain('06'); // KeyC
    expect(hid.droppedReports).toBeGreaterThanOrEqual(1);
  });

  it('writes nothing while the UDC is not configured, and the release-all first when it is', async () => {
    const { hid, host, ep, settle, states } = await setup();
    const kbd = ep('kbd.0');
    hid.sendKey('KeyA', true);
    await settle();
    host.setUdc('suspended');
    expect(hid.getState().online).toBe(false);
    expect(states.at(-1)!.keyboard.online).toBe(false);
    const before = kbd.written.length;
    hid.sendKey('KeyB', true);
    hid.sendKey('KeyA', false);
    hid.sendMouseButton('left', true);
    await settle();
    expect(kbd.written.length).toBe(before);
    host.setUdc('configured');
    expect(hid.getState().online).toBe(true);
    hid.sendKey('KeyC', true);
    await settle();
    expect(kbd.written.slice(before)).toEqual([RELEASED, '0000060000000000']);
  });

  it('types a paste as one report per transition and stops it when the keyboard is offline', async () => {
    const { hid, host, ep } = await setup();
    const events = [
      { key: 'ShiftLeft', state: true },
      { key: 'KeyH', state: true },
      { key: 'KeyH', state: false },
      { key: 'ShiftLeft', state: false },
      { key: 'KeyI', state: true },
      { key: 'KeyI', state: false },
    ];
    await hid.typeSequence(events, 0, new AbortController().signal);
    expect(ep('kbd.0').written.slice(1)).toEqual([
      '0200000000000000',
      '02000b0000000000',
      '0200000000000000',
      RELEASED,
      '00000c0000000000',
      RELEASED,
    ]);
    host.setUdc('not attached');
    await expect(hid.typeSequence(events, 0, new AbortController().signal)).rejects.toBeInstanceOf(
      GadgetHidOfflineError,
    );
  });
});

describe('GadgetHid mouse', () => {
  it('writes absolute reports at 0..32767, repeating the position in clicks and wheels', async () => {
    const { hid, ep, settle } = await setup();
    hid.sendMouseMove(-32768, 32767);
    hid.sendMouseButton('left', true);
    hid.sendMouseWheel(-1, 2);
    hid.sendMouseButton('left', false);
    hid.sendMouseRelative(5, 5); // not in absolute mode
    await settle();
    expect(ep('absolute.0').written.slice(1)).toEqual([
      '000000ff7f0000',
      '010000ff7f0000',
      '010000ff7f02ff',
      '000000ff7f0000',
    ]);
  });

  it('switches to relative through the host, reopening both nodes of the new gadget', async () => {
    const { hid, host, ep, opened, settle, states } = await setup();
    ep('kbd.0').output(0x02);
    hid.sendMouseButton('right', true);
    await settle();
    await hid.setMouseOutput('usb_rel');
    expect(host.calls).toEqual(['setMouseMode relative']);
    // The held button was released on the old mouse before it went away.
    expect(ep('absolute.0').written.at(-1)).toBe('00004000400000');
    expect(ep('absolute.0').closed).toBe(true);
    expect(ep('kbd.0').closed).toBe(true);
    expect(opened).toEqual(['kbd.0', 'absolute.0', 'kbd.1', 'relative.1']);
    expect(hid.getState().mouse).toMatchObject({
      absolute: false,
      online: true,
      outputs: { available: ['usb', 'usb_rel'], active: 'usb_rel' },
    });
    expect(states.at(-1)!.mouse.absolute).toBe(false);
    // The host's keyboard did not change: its LEDs stay until it says otherwise.
    expect(hid.getState().keyboard.leds.caps).toBe(true);
    hid.sendMouseRelative(-3, 200);
    hid.sendMouseMove(0, 0); // not in relative mode
    hid.sendMouseButton('up', true);
    await settle();
    expect(ep('relative.1').written).toEqual(['0000000000', '00fd7f0000', '0800000000']);
    expect(ep('kbd.1').written).toEqual([RELEASED]);
    await hid.setMouseOutput('usb_rel'); // already: nothing
    expect(host.calls).toHaveLength(1);
    await expect(hid.setMouseOutput('ps2')).rejects.toThrow(/unknown mouse output/);
  });

  it('without onRebuilding, closes the nodes itself before the host rebuilds', async () => {
    const host = new FakeHost();
    const closedAtSwitch: boolean[] = [];
    const { hid, ep, opened } = await setup(
      Object.assign(host, {
        onRebuilding: undefined,
        setMouseMode: async (mode: GadgetMouseMode): Promise<void> => {
          closedAtSwitch.push(ep('kbd.0').closed, ep('absolute.0').closed);
          await FakeHost.prototype.setMouseMode.call(host, mode);
        },
      }),
    );
    await hid.setMouseOutput('usb_rel');
    expect(closedAtSwitch).toEqual([true, true]);
    expect(opened).toEqual(['kbd.0', 'absolute.0', 'kbd.1', 'relative.1']);
  });

  it('a switch that fails half-way still leaves the nodes open', async () => {
    const host = new FakeHost();
    host.failSwitch = true;
    const { hid, opened } = await setup(host);
    await expect(hid.setMouseOutput('usb_rel')).rejects.toThrow(/configfs/);
    expect(opened).toEqual(['kbd.0', 'absolute.0', 'kbd.0', 'absolute.0']);
    expect(hid.getState().keyboard.online).toBe(true);
    expect(hid.getState().mouse.absolute).toBe(true);
  });

  it('a mouse the host does not poll is offline on its own; the keyboard keeps the HID online', async () => {
    const { hid, ep, settle } = await setup();
    const mouse = ep('absolute.0');
    mouse.stalled = true; // a BIOS reads the boot keyboard, not the absolute mouse
    hid.sendMouseMove(100, 100);
    await waitFor(() => !hid.getState().mouse.online);
    expect(hid.getState().online).toBe(true);
    expect(hid.getState().keyboard.online).toBe(true);
    hid.sendKey('KeyA', true);
    await settle();
    expect(ep('kbd.0').written.at(-1)).toBe('0000040000000000');
    mouse.stalled = false;
    await waitFor(() => hid.getState().mouse.online, GADGET_PROBE_MS * 20);
    // Back with its release-all at the last position.
    expect(mouse.written.at(-1)).toBe('00324032400000');
  });

  it('opens the nodes there are when a rebuild never says it finished', async () => {
    const host = new FakeHost();
    const { hid, opened } = await setup(host, new Map(), { rebuildWaitMs: 50 });
    // The platform took the functions down and its build failed before onRebuilt.
    host.failSwitch = true;
    await expect(host.setMouseMode('relative')).rejects.toThrow(/configfs/);
    expect(hid.getState().keyboard.online).toBe(false);
    await waitFor(() => hid.getState().keyboard.online);
    expect(opened).toEqual(['kbd.0', 'absolute.0', 'kbd.0', 'absolute.0']);
  });

  it('waits for the plug when the gadget was unplugged (no reopen of absent nodes)', async () => {
    const host = new FakeHost();
    const { hid, opened } = await setup(host, new Map(), { rebuildWaitMs: 20 });
    host.failSwitch = true;
    host.plugged = false;
    await expect(host.setMouseMode('relative')).rejects.toThrow(/configfs/);
    await new Promise((r) => setTimeout(r, 200));
    expect(opened).toEqual(['kbd.0', 'absolute.0']);
    expect(hid.getState().keyboard.online).toBe(false);
  });

  it('plugs and unplugs through the host', async () => {
    const { hid, host } = await setup();
    await hid.setConnected(false);
    expect(host.calls).toEqual(['setConnected false']);
    expect(hid.getState().connected).toBe(false);
  });
});

describe('GadgetHid on a FIFO endpoint (the real hidg code)', () => {
  let dir = '';
  const fds: number[] = [];
  afterEach(() => {
    for (const fd of fds.splice(0)) closeSync(fd);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a host that stops polling: the write times out, offline, then the release comes first', async () => {
    dir = mkdtempSync(join(tmpdir(), 'gadget-hid-'));
    const mouse = join(dir, 'hidg1');
    expect(spawnSync('mkfifo', [mouse]).status).toBe(0);
    const reader = openSync(mouse, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(mouse, constants.O_WRONLY | constants.O_NONBLOCK);
    fds.push(reader, writer);
    const drain = (): Buffer => {
      const out: Buffer[] = [];
      const buf = Buffer.alloc(65536);
      for (;;) {
        try {
          const n = readSync(reader, buf);
          if (n <= 0) break;
          out.push(Buffer.from(buf.subarray(0, n)));
        } catch {
          break;
        }
      }
      return Buffer.concat(out);
    };
    const host = new FakeHost();
    host.hidNodes = () => ({ keyboard: null, mouse });
    const hid = new GadgetHid(host, { log: SILENT_LOGGER, writeTimeoutMs: 400 });
    drivers.push(hid);
    await hid.init();
    await waitFor(() => drain().length === 7); // the release-all of the start
    expect(hid.getState().keyboard.online).toBe(false); // no keyboard node
    // The host stops polling: the pipe fills.
    const chunk = Buffer.alloc(4096, 0xee);
    for (;;) {
      try {
        writeSync(writer, chunk);
      } catch {
        break;
      }
    }
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const t0 = performance.now();
    hid.sendMouseMove(0, 0);
    hid.sendMouseButton('left', true);
    await waitFor(() => !hid.getState().online);
    const took = performance.now() - t0;
    clearInterval(timer);
    expect(took).toBeGreaterThanOrEqual(390);
    expect(took).toBeLessThan(400 + 2000);
    expect(ticks).toBeGreaterThanOrEqual(5);
    hid.sendMouseButton('right', true); // offline: dropped
    // The host polls again.
    let got = Buffer.alloc(0);
    await waitFor(() => {
      got = Buffer.concat([got, drain()]);
      return hid.getState().online;
    });
    hid.sendMouseMove(32767, 32767);
    await waitFor(() => {
      got = Buffer.concat([got, drain()]);
      return got.length > 0 && got.subarray(-7).toString('hex') === '00ff7fff7f0000';
    });
    const reports = got.subarray(got.lastIndexOf(0xee) + 1).toString('hex');
    // Nothing of the offline time, the release-all (position kept), then the new move.
    expect(reports).toBe('00004000400000' + '00ff7fff7f0000');
  });
});
