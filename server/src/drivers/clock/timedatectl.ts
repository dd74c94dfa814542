/**
 * The real clock and time zone on a device where systemd runs: `timedatectl` asks
 * systemd-timedated, which also keeps the RTC and `/etc/localtime` in step.
 *
 * Setting the time: `timedatectl set-time` takes systemd's timestamp syntax; we send
 * `YYYY-MM-DD HH:MM:SS UTC` so the device's own zone never shifts it. timedated refuses while
 * network time is on ("Automatic time synchronization is enabled"): a time the administrator
 * sets by hand wins, so we turn network time off (`set-ntp false`) and set it, retrying for a
 * few seconds because timedated keeps refusing briefly after NTP stops (systemd issue 11420).
 * Network time stays off until turned on again (docs/system.md "Time").
 */
import { existsSync } from 'node:fs';
import { InternalError } from '../../errors';
import { cLocaleRunner, failureText, said } from '../../platform/nmcli/command';
import { CommandError, type CommandRunner } from '../../process/run';
import type { ClockDriver } from './types';
import { LocalClock } from './local';

/** A timedatectl step failed; the message says which and what it said. */
export class ClockCommandError extends InternalError {}

export interface TimedatectlOptions {
  runner?: CommandRunner;
  /** Pause between set-time retries after turning NTP off (tests: 0). Default 1000 ms. */
  retryDelayMs?: number;
  /** set-time attempts after turning NTP off. Default 8. */
  retries?: number;
}

/** unix ms → `2024-01-02 03:04:05 UTC` (systemd.time(7)). */
export function systemdUtcTimestamp(unixMs: number): string {
  const iso = new Date(Math.floor(unixMs / 1000) * 1000).toISOString(); // 2024-01-02T03:04:05.000Z
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

const NTP_REFUSAL = /automatic time synchronization is enabled/i;

export class TimedatectlClock implements ClockDriver {
  readonly name = 'timedatectl';
  readonly kind = 'system' as const;
  private readonly run: CommandRunner;
  private readonly retryDelayMs: number;
  private readonly retries: number;

  constructor(opts: TimedatectlOptions = {}) {
    this.run = opts.runner ?? cLocaleRunner;
    this.retryDelayMs = opts.retryDelayMs ?? 1000;
    this.retries = opts.retries ?? 8;
  }

  now(): number {
    return Date.now();
  }

  async zone(): Promise<string> {
    const { stdout } = await this.timedatectl(['show', '-p', 'Timezone', '--value']);
    return stdout.trim() || 'UTC';
  }

  async setZone(name: string): Promise<void> {
    await this.timedatectl(['set-timezone', name]);
  }

  async setTime(unixMs: number): Promise<void> {
    const args = ['set-time', systemdUtcTimestamp(unixMs)];
    try {
      await this.run('timedatectl', args);
      return;
    } catch (err) {
      if (!(err instanceof CommandError && NTP_REFUSAL.test(said(err)))) throw failed(err);
    }
    await this.timedatectl(['set-ntp', 'false']);
    let last: unknown = null;
    for (let i = 0; i < this.retries; i++) {
      // the clock moved on while we waited: set what was asked plus the time spent
      const started = Date.now();
      try {
        await this.run('timedatectl', ['set-time', systemdUtcTimestamp(unixMs)]);
        return;
      } catch (err) {
        last = err;
        if (!(err instanceof CommandError && NTP_REFUSAL.test(said(err)))) break;
      }
      await new Promise((r) => setTimeout(r, this.retryDelayMs));
      unixMs += Date.now() - started;
    }
    throw failed(last);
  }

  async init(): Promise<void> {}
  async dispose(): Promise<void> {}

  private async timedatectl(args: string[]): Promise<{ stdout: string }> {
    try {
      return await this.run('timedatectl', args);
    } catch (err) {
      throw failed(err);
    }
  }
}

function failed(err: unknown): ClockCommandError {
  if (err instanceof CommandError) {
    return new ClockCommandError(`timedatectl ${err.args[0] ?? ''} failed: ${failureText(err)}`);
  }
  return new ClockCommandError(`timedatectl failed: ${String(err)}`);
}

/**
 * The device's clock: timedatectl when systemd runs (`/run/systemd/system` exists, as
 * sd_booted(3) checks), else `/etc/localtime` under `root` and `date -s`.
 */
export function systemClock(
  root: string,
  opts: TimedatectlOptions & { systemdMarker?: string } = {},
): ClockDriver {
  const marker = opts.systemdMarker ?? '/run/systemd/system';
  return existsSync(marker) ? new TimedatectlClock(opts) : new LocalClock({ root, kind: 'system' });
}
