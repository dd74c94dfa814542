import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { encodeKey, encodeMouseButton, encodeMouseRelative, encodeMouseWheel } from '@kvm/protocol';
import { TestbedHid } from '../../drivers/hid/testbed';
import type { TestbedReport } from '../../drivers/hid/testbed';
import { paceKeyEvents } from '../../drivers/hid/pace';
import type { KeyEvent } from '../../drivers/hid/types';
import { HidService } from './hid-service';
import { buttonsStillDown, stillPressed } from './test-support';

/** A fake that records the reports, as the house style asks: bytes, not call assertions. */
function setup(opts: { jigglerIntervalS?: number } = {}) {
  let now = 0;
  const driver = new TestbedHid(null);
  const reports: TestbedReport[] = [];
  driver.on('report', (r) => reports.push(r));
  const saved: unknown[] = [];
  const hid = new HidService({
    driver,
    now: () => now,
    saveSettings: async (s) => {
      saved.push(s);
    },
    ...opts,
  });
  return {
    hid,
    driver,
    reports,
    saved,
    advance: (ms: number) => {
      now += ms;
      vi.advanceTimersByTime(ms);
    },
  };
}

/** Shift held, then A typed forever: a paste that never ends by itself. */
function* endless(): Generator<KeyEvent> {
  yield { key: 'ShiftLeft', state: true };
  for (;;) {
    yield { key: 'KeyA', state: true };
    yield { key: 'KeyA', state: false };
  }
}

const keys = (reports: TestbedReport[]) =>
  reports.flatMap((r) => (r.kind === 'key' ? [`${r.key}${r.pressed ? '+' : '-'}`] : []));

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('HidService', () => {
  it('releases what a client held when it goes away, modifiers last', () => {
    const t = setup();
    t.hid.handleFrame('ws:1', encodeKey('ControlLeft', true));
    t.hid.handleFrame('ws:1', encodeKey('KeyC', true));
    t.hid.handleFrame('ws:1', encodeMouseButton('left', true));
    t.hid.clientGone('ws:1');
    expect(keys(t.reports)).toEqual(['ControlLeft+', 'KeyC+', 'KeyC-', 'ControlLeft-']);
    expect(t.reports.at(-1)).toEqual({ kind: 'button', button: 'left', pressed: false });
    expect(t.driver.held).toEqual([]);
  });

  it('releases on the release-all op (focus lost)', () => {
    const t = setup();
    const released: string[] = [];
    t.hid.on('released', (c, why) => released.push(`${c}:${why}`));
    t.hid.handleFrame('rtc:a', encodeKey('ShiftLeft', true));
    t.hid.handleFrame('rtc:a', Uint8Array.of(0x06));
    expect(keys(t.reports)).toEqual(['ShiftLeft+', 'ShiftLeft-']);
    expect(released).toEqual(['rtc:a:focus']);
  });

  it('releases a keepalive client that goes silent, never one that keeps talking', () => {
    const t = setup();
    t.hid.handleFrame('rtc:a', Uint8Array.of(0x07));
    t.hid.handleFrame('rtc:a', encodeKey('KeyW', true));
    for (let i = 0; i < 20; i++) {
      t.advance(250);
      t.hid.handleFrame('rtc:a', Uint8Array.of(0x07));
    }
    expect(t.driver.held).toEqual(['KeyW']);
    t.advance(1000);
    expect(t.driver.held).toEqual(['KeyW']); // exactly at the timeout: still held
    t.advance(100);
    expect(t.driver.held).toEqual([]);
  });

  it('does not watch clients that never sent a keepalive (kvmd clients)', () => {
    const t = setup();
    t.hid.handleFrame('ws:1', encodeKey('KeyW', true));
    t.advance(10_000);
    expect(t.driver.held).toEqual(['KeyW']);
  });

  it('applies finish to every key but modifiers and PrintScreen', () => {
    const t = setup();
    t.hid.handleFrame('ws:1', encodeKey('KeyA', true, true));
    t.hid.handleFrame('ws:1', encodeKey('AltLeft', true, true));
    t.hid.handleFrame('ws:1', encodeKey('PrintScreen', true, true));
    expect(keys(t.reports)).toEqual(['KeyA+', 'KeyA-', 'AltLeft+', 'PrintScreen+']);
  });

  it('ignores repeated presses and counts holders across clients', () => {
    const t = setup();
    t.hid.handleFrame('ws:1', encodeKey('KeyA', true));
    t.hid.handleFrame('ws:1', encodeKey('KeyA', true));
    t.hid.handleFrame('rtc:b', encodeKey('KeyA', true));
    t.hid.clientGone('ws:1');
    expect(t.driver.held).toEqual(['KeyA']);
    t.hid.handleFrame('rtc:b', encodeKey('KeyA', false));
    expect(keys(t.reports)).toEqual(['KeyA+', 'KeyA-']);
  });

  it('squashes relative and wheel deltas when asked', () => {
    const t = setup();
    const moves = Array.from({ length: 10 }, () => ({ x: 20, y: -1 }));
    t.hid.handleFrame('ws:1', encodeMouseRelative(moves, true));
    t.hid.handleFrame(
      'ws:1',
      encodeMouseWheel(
        [
          { x: 0, y: 1 },
          { x: 0, y: 1 },
        ],
        false,
      ),
    );
    expect(t.reports).toEqual([
      { kind: 'relative', dx: 120, dy: -6 },
      { kind: 'relative', dx: 80, dy: -4 },
      { kind: 'wheel', dx: 0, dy: 1 },
      { kind: 'wheel', dx: 0, dy: 1 },
    ]);
  });

  it('runs the jiggler only when enabled and idle', async () => {
    const t = setup({ jigglerIntervalS: 5 });
    t.advance(6000);
    expect(t.reports).toEqual([]);
    await t.hid.setParams({ jiggler: true });
    expect(t.saved).toEqual([{ jiggler: true, mouseOutput: 'usb' }]);
    expect(t.hid.getState().jiggler).toEqual({
      enabled: true,
      active: true,
      interval: 5,
      schedule: [],
    });
    t.advance(1000);
    expect(t.reports.filter((r) => r.kind === 'move').length).toBe(2);
    t.reports.length = 0;
    t.hid.handleFrame('ws:1', encodeMouseRelative([{ x: 1, y: 1 }], false));
    t.advance(4000);
    expect(t.reports.filter((r) => r.kind === 'move')).toEqual([]);
  });

  it('switches the mouse output, busy meanwhile, refusing unknown outputs', async () => {
    const t = setup();
    const states: boolean[] = [];
    t.hid.on('state', (s) => states.push(s.busy));
    await expect(t.hid.setParams({ mouseOutput: 'usb_win98' })).rejects.toThrow(/mouse_output/);
    await t.hid.setParams({ mouseOutput: 'usb_rel' });
    expect(t.hid.getState().mouse).toMatchObject({
      absolute: false,
      outputs: { active: 'usb_rel' },
    });
    expect(states[0]).toBe(true);
    expect(states.at(-1)).toBe(false);
    expect(t.saved.at(-1)).toEqual({ jiggler: false, mouseOutput: 'usb_rel' });
  });

  it('stops a paste on reset, releasing every key it pressed, the event loop turning meanwhile', async () => {
    const t = setup();
    vi.useRealTimers();
    // An endless paste: only a lazy taker with turns for the loop gets past the first line.
    const paste = t.hid.type(endless(), { delayMs: 0 });
    await expect.poll(() => t.reports.length, { timeout: 10_000 }).toBeGreaterThan(200);
    expect(t.hid.pasting).toBe(true);
    await t.hid.reset();
    await expect(paste).resolves.toBe('reset');
    expect(t.hid.pasting).toBe(false);
    expect(t.driver.held).toEqual([]);
    expect(stillPressed(t.reports)).toEqual([]);
    expect(keys(t.reports).at(-1)).toBe('ShiftLeft-');
  });

  it('a new paste replaces the one typing, after its keys are released', async () => {
    const t = setup();
    vi.useRealTimers();
    const first = t.hid.type(endless(), { delayMs: 1 });
    await expect.poll(() => t.driver.held, { timeout: 10_000 }).toContain('ShiftLeft');
    const second = t.hid.type(
      [
        { key: 'KeyB', state: true },
        { key: 'KeyB', state: false },
      ],
      { delayMs: 0 },
    );
    await expect(first).resolves.toBe('replaced');
    await expect(second).resolves.toBeNull();
    const log = keys(t.reports);
    expect(log.slice(-2)).toEqual(['KeyB+', 'KeyB-']);
    expect(log.lastIndexOf('ShiftLeft-')).toBeLessThan(log.indexOf('KeyB+'));
    expect(t.driver.held).toEqual([]);
  });

  it('stops the paste of a session that ends, or of a caller that leaves, and no other', async () => {
    const t = setup();
    vi.useRealTimers();
    const mine = t.hid.type(endless(), { delayMs: 1, owner: 'session-a' });
    await expect.poll(() => t.driver.held, { timeout: 10_000 }).toContain('ShiftLeft');
    t.hid.sessionEnded('session-b');
    expect(t.hid.pasting).toBe(true);
    t.hid.sessionEnded('session-a');
    await expect(mine).resolves.toBe('session');
    expect(t.driver.held).toEqual([]);

    const caller = new AbortController();
    const theirs = t.hid.type(endless(), { delayMs: 1, signal: caller.signal });
    await expect.poll(() => t.driver.held, { timeout: 10_000 }).toContain('ShiftLeft');
    caller.abort();
    await expect(theirs).resolves.toBe('client');
    expect(t.driver.held).toEqual([]);
  });

  it('releases what a paste pressed when the driver fails mid-way', async () => {
    const t = setup();
    vi.useRealTimers();
    let sent = 0;
    t.driver.typeSequence = (events, delayMs, signal) =>
      paceKeyEvents(events, delayMs, signal, (key, pressed) => {
        if (++sent === 3) throw new Error('gone');
        t.driver.sendKey(key, pressed);
      });
    await expect(t.hid.type(endless(), { delayMs: 0 })).rejects.toThrow('gone');
    expect(t.driver.held).toEqual([]);
    expect(t.hid.pasting).toBe(false);
  });

  it('HTTP events: send_key without state taps, send_shortcut presses in order and releases reversed', () => {
    const t = setup();
    t.hid.sendKey('KeyB', undefined, false);
    t.hid.sendShortcut(['ControlLeft', 'AltLeft', 'Delete']);
    expect(keys(t.reports)).toEqual([
      'KeyB+',
      'KeyB-',
      'ControlLeft+',
      'AltLeft+',
      'Delete+',
      'Delete-',
      'AltLeft-',
      'ControlLeft-',
    ]);
  });

  it('reset during a mouse re-creation releases what was pressed meanwhile, after it', async () => {
    const t = setup();
    vi.useRealTimers();
    let finish!: () => void;
    const recreate = t.driver.setMouseOutput.bind(t.driver);
    t.driver.setMouseOutput = async (output) => {
      await new Promise<void>((r) => (finish = r));
      await recreate(output);
    };
    const switching = t.hid.setParams({ mouseOutput: 'usb_rel' });
    expect(t.hid.getState().busy).toBe(true);
    await expect(t.hid.setParams({ mouseOutput: 'usb_rel' })).rejects.toMatchObject({
      status: 409,
      wireName: 'HidBusyError',
    });
    const reset = t.hid.reset();
    // a press that lands while the device is being re-created, after reset's first release
    t.hid.handleFrame('ws:1', encodeMouseButton('left', true));
    finish();
    await Promise.all([switching, reset]);
    expect(buttonsStillDown(t.reports)).toEqual([]);
    expect(t.hid.getState().busy).toBe(false);
  });
});
