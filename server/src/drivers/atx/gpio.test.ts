import { afterEach, describe, expect, it } from 'vitest';
import { buildConfig } from '../../config';
import { toHttp } from '../../errors';
import { TARGET_PRESETS, resolveTypes } from '../choices';
import {
  GpioToolError,
  type GpioChild,
  type GpioChipInfo,
  type GpioEdge,
  type GpioExit,
  type GpioTools,
} from '../../platform/gpio/tools';
import { AtxGpioBusyError, AtxGpioOfflineError, GpioAtx, type GpioAtxOptions } from './gpio';
import type { AtxDriverState } from './types';

/** One driven level of a line, as the chip saw it. */
interface Drive {
  offset: number;
  level: 0 | 1;
  by: string;
}

/**
 * A gpio-sim in memory: named lines with a level, an owner (our tools' children or "another
 * process"), input levels the test sets (edges reach the monitors), a chip that can vanish.
 */
class FakeChip implements GpioTools {
  present = true;
  readonly levels: Array<0 | 1>;
  readonly owner: Array<string | null>;
  readonly drives: Drive[] = [];
  readonly pulses: Array<{ offset: number; level: 0 | 1; ms: number }> = [];
  private monitors = new Set<{ offsets: readonly number[]; onEdge: (e: GpioEdge) => void }>();
  /** Children alive now (holders, monitors, pulses). */
  readonly alive = new Set<FakeChild>();

  constructor(readonly names: Array<string | null>) {
    this.levels = names.map(() => 0);
    this.owner = names.map(() => null);
  }

  /** How long gpioinfo takes (a slow board, TCG under load). */
  infoMs = 0;

  async info(): Promise<GpioChipInfo> {
    if (this.infoMs) await new Promise((r) => setTimeout(r, this.infoMs));
    if (!this.present) throw new GpioToolError('missing', "error opening gpiochip 'sim': ENOENT");
    return {
      name: 'gpiochip7',
      lines: this.names.map((name, offset) => ({
        offset,
        name,
        consumer: this.owner[offset] ?? null,
        used: this.owner[offset] !== null,
        direction: 'input',
        activeLow: false,
      })),
    };
  }

  async get(_chip: string, offsets: readonly number[]): Promise<Array<0 | 1>> {
    if (!this.present) throw new GpioToolError('missing', 'No such file or directory');
    if (offsets.some((o) => this.owner[o] !== null)) {
      throw new GpioToolError('busy', 'error reading GPIO values: Device or resource busy');
    }
    return offsets.map((o) => this.levels[o] as 0 | 1);
  }

  private request(offsets: readonly number[], who: string): string | null {
    if (!this.present) return "gpioset: error opening gpiochip 'sim': No such file or directory";
    if (offsets.some((o) => this.owner[o] !== null)) {
      return 'error setting the GPIO line values: Device or resource busy';
    }
    for (const o of offsets) this.owner[o] = who;
    return null;
  }

  hold(_chip: string, offset: number, value: 0 | 1): GpioChild {
    const child = new FakeChild(this, [offset]);
    const err = this.request([offset], 'gpioset');
    if (err) return child.end(1, err);
    this.drive(offset, value, 'hold');
    return child;
  }

  pulse(_chip: string, offset: number, value: 0 | 1, ms: number): GpioChild {
    const child = new FakeChild(this, [offset]);
    const err = this.request([offset], 'gpioset');
    if (err) return child.end(1, err);
    this.pulses.push({ offset, level: value, ms });
    this.drive(offset, value, 'pulse');
    // the tool's own sleep, shortened: the driver's job is the ms it asks for
    setTimeout(() => child.end(0, ''), 5);
    return child;
  }

  monitor(_chip: string, offsets: readonly number[], onEdge: (e: GpioEdge) => void): GpioChild {
    const child = new FakeChild(this, offsets);
    const err = this.request(offsets, 'gpiomon');
    if (err) return child.end(1, err);
    const m = { offsets, onEdge };
    this.monitors.add(m);
    child.onEnd = () => this.monitors.delete(m);
    return child;
  }

  drive(offset: number, level: 0 | 1, by: string): void {
    this.levels[offset] = level;
    this.drives.push({ offset, level, by });
  }

  /** The simulated side: an input line's level changes (gpio-sim's pull). */
  setInput(offset: number, level: 0 | 1): void {
    if (this.levels[offset] === level) return;
    this.levels[offset] = level;
    for (const m of this.monitors) {
      if (m.offsets.includes(offset)) m.onEdge({ offset, value: level, ns: 0n });
    }
  }

  release(offsets: readonly number[]): void {
    for (const o of offsets) this.owner[o] = null;
  }

  private gone = new Set<() => void>();

  watchGone(_kernelName: string, onGone: () => void): () => void {
    this.gone.add(onGone);
    return () => this.gone.delete(onGone);
  }

  /**
   * The chip goes away under its holders, as a kernel's does: their processes live on (they do
   * not notice), only the device node's removal says it.
   */
  vanish(): void {
    this.present = false;
    for (const f of [...this.gone]) f();
  }
}

class FakeChild implements GpioChild {
  readonly pid = 1;
  readonly exited: Promise<GpioExit>;
  onEnd: (() => void) | null = null;
  private settle: (e: GpioExit) => void = () => undefined;
  private done = false;
  private stopped = false;

  constructor(
    private readonly chip: FakeChip,
    readonly offsets: readonly number[],
  ) {
    this.exited = new Promise((r) => (this.settle = r));
    chip.alive.add(this);
  }

  end(code: number, stderr: string): this {
    if (this.done) return this;
    this.done = true;
    this.chip.alive.delete(this);
    // a line is released only by the child that held it
    if (!stderr.includes('busy') && !stderr.includes('opening')) this.chip.release(this.offsets);
    this.onEnd?.();
    this.settle({ code, signal: null, stderr, stopped: this.stopped });
    return this;
  }

  async stop(): Promise<GpioExit> {
    this.stopped = true;
    this.end(0, '');
    return this.exited;
  }
}

const NAMES = ['atx-power-button', 'atx-reset-button', 'atx-power-led', 'atx-hdd-led'];

function make(chip: FakeChip, over: Partial<GpioAtxOptions> = {}): GpioAtx {
  return new GpioAtx({
    chip: 'sim',
    power_button: { line: 'atx-power-button', active_low: false },
    reset_button: { line: 1, active_low: false },
    power_led: { line: 'atx-power-led', active_low: false },
    hdd_led: { line: 'atx-hdd-led', active_low: false },
    tools: chip,
    retryMs: 20,
    retryMaxMs: 40,
    confirmMs: 500,
    ...over,
  });
}

async function until(what: string, fn: () => boolean, ms = 3000): Promise<void> {
  const end = performance.now() + ms;
  while (!fn()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

let atx: GpioAtx | null = null;
afterEach(async () => {
  await atx?.dispose();
  atx = null;
});

describe('GpioAtx', () => {
  it('holds the button lines inactive, and a press is one pulse of the SPEC hold time', async () => {
    const chip = new FakeChip(NAMES);
    atx = make(chip);
    await atx.init();
    await until('online', () => atx!.getState().problem === null);
    expect(chip.owner).toEqual(['gpioset', 'gpioset', 'gpiomon', 'gpiomon']);
    expect(chip.drives).toEqual([
      { offset: 0, level: 0, by: 'hold' },
      { offset: 1, level: 0, by: 'hold' },
    ]);
    await atx.click('power');
    await atx.click('power_long');
    await atx.click('reset');
    expect(chip.pulses).toEqual([
      { offset: 0, level: 1, ms: 500 },
      { offset: 0, level: 1, ms: 6500 },
      { offset: 1, level: 1, ms: 500 },
    ]);
    // after each press the line is held inactive again
    expect(chip.drives.slice(2).map((d) => `${d.offset}:${d.level}:${d.by}`)).toEqual([
      '0:1:pulse',
      '0:0:hold',
      '0:1:pulse',
      '0:0:hold',
      '1:1:pulse',
      '1:0:hold',
    ]);
    expect(chip.owner.slice(0, 2)).toEqual(['gpioset', 'gpioset']);
  });

  it("a press while the last press's holder is still being confirmed is a pulse, not a fault", async () => {
    const chip = new FakeChip(NAMES);
    atx = make(chip, { confirmMs: 5000 });
    await atx.init();
    await until('online', () => atx!.getState().problem === null);
    // gpioinfo slow: the holder after the first press is not confirmed when the second comes
    chip.infoMs = 100;
    const states: Array<string | null> = [];
    atx.onState((s) => states.push(s.problem ?? null));
    await atx.click('power');
    await atx.click('power');
    await atx.click('reset');
    expect(chip.pulses.map((p) => p.offset)).toEqual([0, 0, 1]);
    await until(
      'both held again',
      () => chip.owner[0] === 'gpioset' && chip.owner[1] === 'gpioset',
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(states).toEqual([]);
    expect(atx.getState().problem).toBeNull();
  });

  it('active-low lines: the buttons idle high and pulse low, an LED is on at level 0', async () => {
    const chip = new FakeChip(NAMES);
    chip.levels[2] = 1; // power LED line high: off when active-low
    atx = make(chip, {
      power_button: { line: 0, active_low: true },
      power_led: { line: 2, active_low: true },
    });
    await atx.init();
    await until('online', () => atx!.getState().problem === null);
    expect(atx.getState().leds.power).toBe(false);
    expect(chip.levels[0]).toBe(1);
    await atx.click('power');
    expect(chip.pulses).toEqual([{ offset: 0, level: 0, ms: 500 }]);
    expect(chip.levels[0]).toBe(1);
    chip.setInput(2, 0);
    expect(atx.getState().leds.power).toBe(true);
  });

  it('reads the LEDs once, then follows their edges (no polling)', async () => {
    const chip = new FakeChip(NAMES);
    chip.levels[3] = 1;
    atx = make(chip);
    const seen: AtxDriverState[] = [];
    atx.onState((s) => seen.push(s));
    await atx.init();
    await until('online', () => atx!.getState().problem === null);
    expect(atx.getState().leds).toEqual({ power: false, hdd: true });
    const infos = seen.length;
    chip.setInput(2, 1);
    expect(seen.at(-1)?.leds).toEqual({ power: true, hdd: true });
    chip.setInput(3, 0);
    chip.setInput(2, 0);
    expect(seen.slice(infos).map((s) => s.leds)).toEqual([
      { power: true, hdd: true },
      { power: true, hdd: false },
      { power: false, hdd: false },
    ]);
  });

  it('a line another process holds: the state says so, a press is a 409, and it recovers', async () => {
    const chip = new FakeChip(NAMES);
    chip.owner[1] = 'someone-else';
    atx = make(chip);
    await atx.init();
    await until('the problem', () => /held by another process/.test(atx!.getState().problem ?? ''));
    expect(atx.getState().problem).toBe(
      'reset button (gpiochip7 line 1 "atx-reset-button") is held by another process',
    );
    const err = await atx.click('power').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AtxGpioBusyError);
    const http = toHttp(err);
    expect(http.status).toBe(409);
    expect(http.body).toEqual({
      ok: false,
      result: {
        error: 'AtxGpioBusyError',
        error_msg:
          'ATX over GPIO is offline: reset button (gpiochip7 line 1 "atx-reset-button") is held by another process',
      },
    });
    // nothing of ours is left holding while it waits
    expect(chip.alive.size).toBe(0);
    chip.owner[1] = null;
    await until('recovered', () => atx!.getState().problem === null);
    await atx.click('reset');
    expect(chip.pulses).toEqual([{ offset: 1, level: 1, ms: 500 }]);
  });

  it('the chip missing: offline with a 503, back when it appears; and when it goes away', async () => {
    const chip = new FakeChip(NAMES);
    chip.present = false;
    atx = make(chip);
    await atx.init();
    await until('the problem', () => atx!.getState().problem === 'GPIO chip "sim" is missing');
    const err = await atx.click('power').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AtxGpioOfflineError);
    expect(toHttp(err).status).toBe(503);
    chip.present = true;
    await until('online', () => atx!.getState().problem === null);
    chip.vanish();
    await until('missing again', () => atx!.getState().problem === 'GPIO chip "sim" is missing');
    // its holders and monitor were stopped (their lines released) when the node went away
    await until('children stopped', () => chip.alive.size === 0);
    chip.present = true;
    chip.release([0, 1, 2, 3]);
    await until('online again', () => atx!.getState().problem === null);
    await atx.click('power');
    expect(chip.pulses).toHaveLength(1);
  });

  it('a line name the chip does not have is said, with the chip and the line', async () => {
    const chip = new FakeChip(NAMES);
    atx = make(chip, { hdd_led: { line: 'nope', active_low: false } });
    await atx.init();
    await until(
      'the problem',
      () => atx!.getState().problem !== null && !/connecting/.test(atx!.getState().problem!),
    );
    expect(atx.getState().problem).toBe(
      'GPIO chip "sim" (gpiochip7) has no line named "nope" (HDD LED)',
    );
  });

  it('a holder that dies is a fault; the driver holds the line again', async () => {
    const chip = new FakeChip(NAMES);
    atx = make(chip);
    await atx.init();
    await until('online', () => atx!.getState().problem === null);
    const holder = [...chip.alive].find((c) => c.offsets[0] === 0 && c.onEnd === null);
    holder!.end(null as unknown as number, '');
    await until(
      'held again',
      () => chip.owner[0] === 'gpioset' && atx!.getState().problem === null,
    );
    expect(chip.alive.size).toBe(3);
  });

  it('dispose releases every line', async () => {
    const chip = new FakeChip(NAMES);
    atx = make(chip);
    await atx.init();
    await until('online', () => atx!.getState().problem === null);
    await atx.dispose();
    atx = null;
    expect(chip.owner).toEqual([null, null, null, null]);
    expect(chip.alive.size).toBe(0);
  });

  it('no LEDs configured: buttons only, the LEDs stay off', async () => {
    const chip = new FakeChip(NAMES);
    atx = make(chip, { power_led: null, hdd_led: null });
    await atx.init();
    await until('online', () => atx!.getState().problem === null);
    expect(chip.owner).toEqual(['gpioset', 'gpioset', null, null]);
    expect(atx.getState().leds).toEqual({ power: false, hdd: false });
  });
});

describe('atx.gpio config', () => {
  const defaults = { dataDir: '/tmp/x', webDir: '/tmp/w', keymapsDirs: ['/tmp/k'] };

  it("the gadget target's ATX is gpio, with PiKVM's pins on gpiochip0 by default", () => {
    const cfg = buildConfig({ target: 'gadget' }, defaults);
    expect(resolveTypes('gadget', { ...TARGET_PRESETS.gadget.types, atx: cfg.atx.type }).atx).toBe(
      'gpio',
    );
    expect(cfg.atx.gpio).toEqual({
      chip: 'gpiochip0',
      power_button: { line: 23, active_low: false },
      reset_button: { line: 27, active_low: false },
      power_led: { line: 24, active_low: false },
      hdd_led: { line: 22, active_low: false },
      tools_dir: '/usr/bin',
    });
  });

  it('lines by name, LEDs left out, and bad values named by their key path', () => {
    const cfg = buildConfig(
      {
        atx: {
          gpio: {
            chip: 'kvm-atx',
            power_button: { line: 'atx-power-button', active_low: true },
            hdd_led: null,
          },
        },
      },
      defaults,
    );
    expect(cfg.atx.gpio.power_button).toEqual({ line: 'atx-power-button', active_low: true });
    expect(cfg.atx.gpio.hdd_led).toBeNull();
    expect(() =>
      buildConfig({ atx: { gpio: { power_button: { line: 'a b;rm' } } } }, defaults),
    ).toThrow(/atx\.gpio\.power_button\.line/);
    expect(() => buildConfig({ atx: { gpio: { reset_button: null } } }, defaults)).toThrow(
      /atx\.gpio\.reset_button/,
    );
    expect(() => buildConfig({ atx: { gpio: { chip: '-x y' } } }, defaults)).toThrow(
      /atx\.gpio\.chip/,
    );
  });
});
