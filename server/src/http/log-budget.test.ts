import { describe, expect, it } from 'vitest';
import { LogBudget } from './log-budget';

describe('LogBudget', () => {
  it('allows a burst, then refuses and counts, then reports the count when refilled', () => {
    let t = 0;
    const budget = new LogBudget({ burst: 3, perMinute: 60, now: () => t });
    expect([budget.take(), budget.take(), budget.take()]).toEqual([
      { ok: true, suppressed: 0 },
      { ok: true, suppressed: 0 },
      { ok: true, suppressed: 0 },
    ]);
    for (let i = 0; i < 5; i += 1) expect(budget.take()).toEqual({ ok: false });
    t += 1000; // one line per second at 60 a minute
    expect(budget.take()).toEqual({ ok: true, suppressed: 5 });
    expect(budget.take()).toEqual({ ok: false });
  });

  it('never holds more than the burst however long it was quiet', () => {
    let t = 0;
    const budget = new LogBudget({ burst: 2, perMinute: 600, now: () => t });
    t += 3_600_000;
    expect(budget.take().ok).toBe(true);
    expect(budget.take().ok).toBe(true);
    expect(budget.take().ok).toBe(false);
  });
});
