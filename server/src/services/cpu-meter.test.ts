import { describe, expect, it } from 'vitest';
import { CpuMeter, cpuTimes } from './cpu-meter';

describe('CpuMeter', () => {
  it('answers the CPU time spent since its previous reading', () => {
    const readings = [
      { busy: 100, total: 1000 },
      { busy: 130, total: 1100 },
      { busy: 130, total: 1100 },
      { busy: 200, total: 1300 },
    ];
    const meter = new CpuMeter(() => readings.shift()!);
    expect(meter.since()).toEqual({ busy: 30, total: 100 });
    expect(meter.since()).toEqual({ busy: 0, total: 0 });
    expect(meter.since()).toEqual({ busy: 70, total: 200 });
  });

  it("reads the host's counters: busy within total, both growing", () => {
    const first = cpuTimes();
    expect(first.busy).toBeGreaterThan(0);
    expect(first.total).toBeGreaterThanOrEqual(first.busy);
    const spent = new CpuMeter().since();
    expect(spent.total).toBeGreaterThanOrEqual(0);
    expect(spent.busy).toBeLessThanOrEqual(spent.total);
  });
});
