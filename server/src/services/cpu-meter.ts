/**
 * The host's CPU load over the time since the last look, as kvmd's health reports it (the
 * `info` event's `health.cpu` and the Prometheus export each keep their own meter, so one
 * reader does not reset the other's window).
 */
import { cpus } from 'node:os';

export interface CpuTimes {
  /** user + nice + sys + irq, in ms summed over the cores. */
  busy: number;
  /** busy + idle. */
  total: number;
}

/** The CPU time counters since boot, summed over the cores. */
export function cpuTimes(): CpuTimes {
  let busy = 0;
  let total = 0;
  for (const c of cpus()) {
    const t = c.times;
    busy += t.user + t.nice + t.sys + t.irq;
    total += t.user + t.nice + t.sys + t.irq + t.idle;
  }
  return { busy, total };
}

export class CpuMeter {
  private last: CpuTimes;

  constructor(private readonly read: () => CpuTimes = cpuTimes) {
    this.last = read();
  }

  /** The CPU time spent since the previous call (the first: since the meter was made). */
  since(): CpuTimes {
    const now = this.read();
    const spent = { busy: now.busy - this.last.busy, total: now.total - this.last.total };
    this.last = now;
    return spent;
  }
}
