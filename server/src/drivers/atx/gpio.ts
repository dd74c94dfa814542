/**
 * ATX over GPIO (`atx.type: gpio`, issue 24; docs/drivers.md "ATX over GPIO"): the remote
 * computer's power and reset buttons are output lines, its power and HDD LEDs input lines, all
 * on one chip, through libgpiod's tools (platform/gpio/tools.ts).
 *
 * - Each button line is held at its inactive level by a `gpioset --mode=signal` for as long as
 *   the driver runs (the line is ours, driven, and another process asking for it gets EBUSY).
 *   A press stops that holder, runs `gpioset --mode=time` at the active level for the SPEC hold
 *   time (the tool's own sleep times the pulse), then holds the line inactive again.
 * - The LEDs are read once (`gpioget`), then followed by edge events (`gpiomon`), not polled.
 * - Polarity is per line (`active_low`): the driver turns active/inactive into levels.
 * - Any fault (a line another process holds, the chip missing, a tool that dies) stops every
 *   child, says why in `problem` (the `atx` state) and retries with a backoff until it works.
 * - The children die with the server on every exit path (the tools' setpriv and exit hook);
 *   dispose stops them, which releases the lines.
 */
import { ATX_HOLD_MS } from '@kvm/protocol';
import { IsBusyError, ServiceUnavailableError } from '../../errors';
import type { Logger } from '../../log';
import {
  GpioToolError,
  classifyGpioError,
  type GpioChild,
  type GpioChipInfo,
  type GpioExit,
  type GpioTools,
} from '../../platform/gpio/tools';
import type { AtxButton, AtxDriver, AtxDriverState } from './types';

/** A button line another process holds (kvmd envelope, 409). */
export class AtxGpioBusyError extends IsBusyError {
  static override readonly defaultMessage = 'A GPIO line of ATX is held by another process';
}

/** ATX cannot act now: the chip is missing, a line is misconfigured, a tool failed (503). */
export class AtxGpioOfflineError extends ServiceUnavailableError {
  static override readonly defaultMessage = 'ATX over GPIO is offline';
}

export interface GpioLineConfig {
  /** Offset on the chip, or the line's name. */
  line: number | string;
  active_low: boolean;
}

export interface GpioAtxOptions {
  chip: string;
  power_button: GpioLineConfig;
  reset_button: GpioLineConfig;
  power_led: GpioLineConfig | null;
  hdd_led: GpioLineConfig | null;
  tools: GpioTools;
  log?: Logger;
  /** First retry after a fault, doubling up to retryMaxMs. */
  retryMs?: number;
  retryMaxMs?: number;
  /** How long a holder may take to show as holding its line in gpioinfo. */
  confirmMs?: number;
}

type ButtonKey = 'power_button' | 'reset_button';
type LedKey = 'power_led' | 'hdd_led';
const LABELS: Record<ButtonKey | LedKey, string> = {
  power_button: 'power button',
  reset_button: 'reset button',
  power_led: 'power LED',
  hdd_led: 'HDD LED',
};

interface Resolved {
  offset: number;
  activeLow: boolean;
  /** For messages: `power button (line 23 "atx-power")`. */
  label: string;
}

/** A fault: what the state says, and whether it is a line held elsewhere. */
class Fault extends Error {
  constructor(
    message: string,
    readonly busy: boolean,
  ) {
    super(message);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class GpioAtx implements AtxDriver {
  readonly name = 'gpio';
  private readonly listeners = new Set<(state: AtxDriverState) => void>();
  private leds = { power: false, hdd: false };
  private problem: string | null;
  private busyProblem = false;
  private lines: Partial<Record<ButtonKey | LedKey, Resolved>> = {};
  private holders: Partial<Record<ButtonKey, GpioChild>> = {};
  private monitor: GpioChild | null = null;
  private pulse: GpioChild | null = null;
  private unwatchChip: (() => void) | null = null;
  /** Bumped by every teardown: exits of an older generation's children are not faults. */
  private generation = 0;
  private connected = false;
  private disposed = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private retryDelay: number;
  private cycle: Promise<void> | null = null;

  constructor(private readonly opts: GpioAtxOptions) {
    this.problem = `connecting to GPIO chip "${opts.chip}"`;
    this.retryDelay = opts.retryMs ?? 500;
  }

  getState(): AtxDriverState {
    return { enabled: true, leds: { ...this.leds }, problem: this.problem };
  }

  onState(listener: (state: AtxDriverState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async init(): Promise<void> {
    // The server starts without waiting for the chip: the state says what is missing.
    this.cycle = this.connect();
  }

  /** For tests: settles when the current connection attempt has. */
  async settled(): Promise<void> {
    await this.cycle;
  }

  async click(button: AtxButton): Promise<void> {
    const key: ButtonKey = button === 'reset' ? 'reset_button' : 'power_button';
    if (!this.connected) {
      const msg = `ATX over GPIO is offline: ${this.problem ?? 'not connected'}`;
      throw this.busyProblem ? new AtxGpioBusyError(msg) : new AtxGpioOfflineError(msg);
    }
    const line = this.lines[key] as Resolved;
    const gen = this.generation;
    await this.holders[key]?.stop();
    delete this.holders[key];
    const pulse = this.opts.tools.pulse(
      this.opts.chip,
      line.offset,
      line.activeLow ? 0 : 1,
      ATX_HOLD_MS[button],
    );
    this.pulse = pulse;
    const exit = await pulse.exited;
    if (this.pulse === pulse) this.pulse = null;
    if (this.disposed || gen !== this.generation) return;
    if (exit.code !== 0 && !exit.stopped) {
      const fault = this.faultOf(exit, line);
      this.fail(fault);
      const msg = `ATX over GPIO is offline: ${fault.message}`;
      throw fault.busy ? new AtxGpioBusyError(msg) : new AtxGpioOfflineError(msg);
    }
    // The press is over: the holder drives the line inactive at its start; its confirmation
    // (gpioinfo) is not the caller's wait. A failure is a fault like any other.
    this.startHolder(key, gen).catch((err: unknown) => {
      if (!this.disposed && gen === this.generation) this.fail(err as Fault);
    });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.teardown();
    await this.cycle?.catch(() => undefined);
    await this.teardown();
  }

  // ---- connecting -----------------------------------------------------------------------------

  private async connect(): Promise<void> {
    const gen = this.generation;
    try {
      const info = await this.opts.tools.info(this.opts.chip).catch((err: unknown) => {
        throw this.faultOfTool(err, `GPIO chip "${this.opts.chip}"`);
      });
      this.lines = this.resolve(info);
      this.unwatchChip?.();
      this.unwatchChip = this.opts.tools.watchGone(info.name, () => {
        if (gen === this.generation) {
          this.fail(new Fault(`GPIO chip "${this.opts.chip}" is missing`, false));
        }
      });
      await this.startLeds(gen);
      await this.startHolder('power_button', gen);
      await this.startHolder('reset_button', gen);
      if (this.disposed || gen !== this.generation) return;
      this.connected = true;
      this.problem = null;
      this.busyProblem = false;
      this.retryDelay = this.opts.retryMs ?? 500;
      this.opts.log?.info({ chip: info.name, lines: this.lines }, 'atx gpio: lines held');
      this.publish();
    } catch (err) {
      if (this.disposed || gen !== this.generation) return;
      this.fail(err instanceof Fault ? err : new Fault(String((err as Error).message), false));
    }
  }

  private resolve(info: GpioChipInfo): Partial<Record<ButtonKey | LedKey, Resolved>> {
    const out: Partial<Record<ButtonKey | LedKey, Resolved>> = {};
    for (const key of Object.keys(LABELS) as Array<ButtonKey | LedKey>) {
      const cfg = this.opts[key];
      if (!cfg) continue;
      const found =
        typeof cfg.line === 'number'
          ? info.lines.find((l) => l.offset === cfg.line)
          : info.lines.find((l) => l.name === cfg.line);
      if (!found) {
        throw new Fault(
          typeof cfg.line === 'number'
            ? `GPIO chip "${this.opts.chip}" (${info.name}) has no line ${cfg.line} (${LABELS[key]}; it has ${info.lines.length})`
            : `GPIO chip "${this.opts.chip}" (${info.name}) has no line named "${cfg.line}" (${LABELS[key]})`,
          false,
        );
      }
      out[key] = {
        offset: found.offset,
        activeLow: cfg.active_low,
        label: `${LABELS[key]} (${info.name} line ${found.offset}${found.name ? ` "${found.name}"` : ''})`,
      };
    }
    return out;
  }

  private async startLeds(gen: number): Promise<void> {
    const keys = (['power_led', 'hdd_led'] as const).filter((k) => this.lines[k]);
    if (keys.length === 0) return;
    const offsets = keys.map((k) => (this.lines[k] as Resolved).offset);
    const values = await this.opts.tools.get(this.opts.chip, offsets).catch((err: unknown) => {
      throw this.faultOfTool(err, keys.map((k) => (this.lines[k] as Resolved).label).join(', '));
    });
    keys.forEach((k, i) => this.setLed(k, values[i] as 0 | 1, false));
    this.publish();
    if (gen !== this.generation) return;
    const monitor = this.opts.tools.monitor(this.opts.chip, offsets, (edge) => {
      const key = keys.find((k) => this.lines[k]?.offset === edge.offset);
      if (key && gen === this.generation) this.setLed(key, edge.value, true);
    });
    this.monitor = monitor;
    this.watch(monitor, gen, keys.map((k) => (this.lines[k] as Resolved).label).join(', '));
  }

  private setLed(key: LedKey, level: 0 | 1, publish: boolean): void {
    const line = this.lines[key] as Resolved;
    const on = (level === 1) !== line.activeLow;
    const name = key === 'power_led' ? 'power' : 'hdd';
    if (this.leds[name] === on) return;
    this.leds = { ...this.leds, [name]: on };
    if (publish) this.publish();
  }

  /** Holds a button line inactive; settles once gpioinfo shows it held, throws a Fault if not. */
  private async startHolder(key: ButtonKey, gen: number): Promise<void> {
    if (this.disposed || gen !== this.generation) return;
    const line = this.lines[key] as Resolved;
    const holder = this.opts.tools.hold(this.opts.chip, line.offset, line.activeLow ? 1 : 0);
    this.holders[key] = holder;
    let exit: GpioExit | null = null;
    void holder.exited.then((e) => (exit = e));
    // generous: under TCG on a loaded machine a spawn through setpriv took seconds
    const deadline = performance.now() + (this.opts.confirmMs ?? 20_000);
    // A holder stopped on purpose while it is confirmed (the next press, a teardown) is not a
    // fault: whoever stopped it owns the line now.
    const ended = (): boolean => {
      if (!exit) return false;
      if ((exit as GpioExit).stopped || this.holders[key] !== holder) return true;
      throw this.faultOf(exit, line);
    };
    for (;;) {
      if (ended()) return;
      const info = await this.opts.tools.info(this.opts.chip).catch((err: unknown) => {
        throw this.faultOfTool(err, line.label);
      });
      if (ended()) return;
      if (info.lines.find((l) => l.offset === line.offset)?.used) break;
      if (performance.now() > deadline) {
        throw new Fault(`${line.label}: gpioset does not hold the line`, false);
      }
      await sleep(100);
    }
    this.watch(holder, gen, line.label);
  }

  /** An exit nobody asked for is a fault. */
  private watch(child: GpioChild, gen: number, label: string): void {
    void child.exited.then((exit) => {
      if (exit.stopped || this.disposed || gen !== this.generation) return;
      const fault = exit.stderr
        ? this.faultOf(exit, { label })
        : new Fault(`${label}: the GPIO tool ended (${exit.signal ?? `exit ${exit.code}`})`, false);
      this.fail(fault);
    });
  }

  // ---- faults ---------------------------------------------------------------------------------

  private faultOf(exit: GpioExit, line: { label: string }): Fault {
    const kind = classifyGpioError(exit.stderr);
    if (kind === 'busy') return new Fault(`${line.label} is held by another process`, true);
    if (kind === 'missing') return new Fault(`GPIO chip "${this.opts.chip}" is missing`, false);
    return new Fault(
      `${line.label}: ${exit.stderr || `the GPIO tool ended (${exit.signal ?? `exit ${exit.code}`})`}`,
      false,
    );
  }

  private faultOfTool(err: unknown, what: string): Fault {
    if (err instanceof GpioToolError) {
      if (err.kind === 'busy') return new Fault(`${what} is held by another process`, true);
      if (err.kind === 'missing')
        return new Fault(`GPIO chip "${this.opts.chip}" is missing`, false);
      return new Fault(`${what}: ${err.message}`, false);
    }
    return new Fault(`${what}: ${(err as Error).message}`, false);
  }

  private fail(fault: Fault): void {
    if (this.disposed) return;
    const changed = this.problem !== fault.message;
    this.connected = false;
    this.problem = fault.message;
    this.busyProblem = fault.busy;
    if (changed) {
      this.opts.log?.warn({ problem: fault.message }, 'atx gpio: offline, retrying');
      this.publish();
    }
    void this.teardown().then(() => this.scheduleRetry());
  }

  private scheduleRetry(): void {
    if (this.disposed || this.retryTimer) return;
    const delay = this.retryDelay;
    this.retryDelay = Math.min(delay * 2, this.opts.retryMaxMs ?? 5000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (!this.disposed) this.cycle = this.connect();
    }, delay);
  }

  /** Stops every child (their lines are released); their exits are not faults. */
  private async teardown(): Promise<void> {
    this.generation++;
    this.connected = false;
    this.unwatchChip?.();
    this.unwatchChip = null;
    const children = [...Object.values(this.holders), this.monitor, this.pulse].filter(
      (c): c is GpioChild => !!c,
    );
    this.holders = {};
    this.monitor = null;
    this.pulse = null;
    await Promise.all(children.map((c) => c.stop()));
  }

  private publish(): void {
    const state = this.getState();
    for (const l of this.listeners) l(state);
  }
}
