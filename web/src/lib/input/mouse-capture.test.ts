import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Delta } from '@kvm/protocol/hid/codec';
import type { MouseButton } from '@kvm/protocol/hid/keys';
import { clientPointToAbsolute } from '../geometry';
import {
  domButton,
  MouseCapture,
  wheelReport,
  type ButtonEventLike,
  type MouseEnvironment,
  type MouseSettings,
  type MouseSink,
  type PointMapper,
} from './mouse-capture';

/** Records what the capture sends, holding buttons like the HidSender. */
class FakeSink implements MouseSink {
  readonly log: string[] = [];
  pressedButtons = new Set<MouseButton>();
  mouseButton(button: MouseButton, pressed: boolean) {
    if (pressed) this.pressedButtons.add(button);
    else this.pressedButtons.delete(button);
    this.log.push(`${pressed ? '+' : '-'}${button}`);
  }
  move(x: number, y: number) {
    this.log.push(`move ${x},${y}`);
  }
  relativeBatch(deltas: readonly Delta[], squash: boolean) {
    this.log.push(`rel${squash ? '*' : ''} ${deltas.map((d) => `${d.x},${d.y}`).join(' ')}`);
  }
  wheel(dx: number, dy: number) {
    this.log.push(`wheel ${dx},${dy}`);
  }
}

/** A 1000x500 picture at (100, 50), rotated by nothing. */
const DISPLAY = { left: 100, top: 50, width: 1001, height: 501 };
const mapper: PointMapper = (p) => clientPointToAbsolute(p, DISPLAY, 0);

function button(type: 'mousedown' | 'mouseup', n: number, x = 0, y = 0) {
  const event = {
    type,
    button: n,
    clientX: x,
    clientY: y,
    prevented: false,
    preventDefault() {
      event.prevented = true;
    },
  };
  return event satisfies ButtonEventLike;
}

function wheel(deltaX: number, deltaY: number) {
  const event = {
    deltaX,
    deltaY,
    prevented: false,
    preventDefault() {
      event.prevented = true;
    },
  };
  return event;
}

function setup(settings: Partial<MouseSettings> = {}, toAbsolute: PointMapper = mapper) {
  const sink = new FakeSink();
  const capture = new MouseCapture({ sink, toAbsolute, settings });
  return { sink, capture };
}

describe('MouseCapture', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  describe('absolute mode', () => {
    it('maps positions through the geometry, letterbox clamped to the edges', () => {
      const { sink, capture } = setup({ pollingMs: 10 });
      capture.handleMove({ clientX: 100, clientY: 50 }); // top-left pixel
      vi.advanceTimersByTime(10);
      capture.handleMove({ clientX: 600, clientY: 300 }); // centre
      vi.advanceTimersByTime(10);
      capture.handleMove({ clientX: 5000, clientY: 0 }); // beyond the right, in the letterbox
      expect(sink.log).toEqual(['move -32768,-32768', 'move 0,0', 'move 32767,-32768']);
    });

    it('follows the orientation of the picture', () => {
      const rotated: PointMapper = (p) => clientPointToAbsolute(p, DISPLAY, 90);
      const { sink, capture } = setup({}, rotated);
      // Rotated 90° clockwise: the page's top-right corner is the picture's top-left.
      capture.handleMove({ clientX: 1100, clientY: 50 });
      expect(sink.log).toEqual(['move -32768,-32768']);
    });

    it('sends nothing without a picture', () => {
      const { sink, capture } = setup({}, () => null);
      capture.handleMove({ clientX: 1, clientY: 1 });
      vi.advanceTimersByTime(100);
      expect(sink.log).toEqual([]);
    });

    it('coalesces moves: the first at once, then the latest once per poll interval', () => {
      const { sink, capture } = setup({ pollingMs: 50 });
      capture.handleMove({ clientX: 100, clientY: 50 });
      expect(sink.log).toHaveLength(1);
      for (let x = 101; x <= 110; x += 1) capture.handleMove({ clientX: x, clientY: 50 });
      vi.advanceTimersByTime(49);
      expect(sink.log).toHaveLength(1);
      vi.advanceTimersByTime(1);
      expect(sink.log).toEqual([
        'move -32768,-32768',
        `move ${mapper({ x: 110, y: 50 })!.x},-32768`,
      ]);
      // Quiet interval: the gate closes, the next move goes at once again.
      vi.advanceTimersByTime(50);
      capture.handleMove({ clientX: 600, clientY: 300 });
      expect(sink.log.at(-1)).toBe('move 0,0');
    });

    it('clamps the polling interval to 10..100 ms', () => {
      const { sink, capture } = setup({ pollingMs: 1000 });
      capture.handleMove({ clientX: 100, clientY: 50 });
      capture.handleMove({ clientX: 600, clientY: 300 });
      vi.advanceTimersByTime(100);
      expect(sink.log).toHaveLength(2);
    });

    it('does not resend an unchanged position', () => {
      const { sink, capture } = setup();
      capture.handleMove({ clientX: 600, clientY: 300 });
      vi.advanceTimersByTime(10);
      capture.handleMove({ clientX: 600, clientY: 300 });
      vi.advanceTimersByTime(10);
      expect(sink.log).toEqual(['move 0,0']);
    });

    it('moves to the click position before the button goes down', () => {
      const { sink, capture } = setup({ pollingMs: 100 });
      capture.handleMove({ clientX: 100, clientY: 50 });
      capture.handleMove({ clientX: 300, clientY: 50 }); // still coalesced
      const down = button('mousedown', 0, 600, 300);
      capture.handleButton(down);
      capture.handleButton(button('mouseup', 0, 600, 300));
      vi.advanceTimersByTime(500);
      expect(sink.log).toEqual(['move -32768,-32768', 'move 0,0', '+left', '-left']);
      expect(down.prevented).toBe(true);
    });
  });

  describe('buttons', () => {
    it('maps DOM buttons, back and forward included', () => {
      expect([0, 1, 2, 3, 4, 5].map(domButton)).toEqual([
        'left',
        'middle',
        'right',
        'up',
        'down',
        null,
      ]);
    });

    it('prevents the browser acting on back and forward (history navigation)', () => {
      const { sink, capture } = setup();
      const down = button('mousedown', 3, 600, 300);
      const up = button('mouseup', 3, 600, 300);
      capture.handleButton(down);
      capture.handleButton(up);
      expect(down.prevented && up.prevented).toBe(true);
      expect(sink.log.filter((l) => !l.startsWith('move'))).toEqual(['+up', '-up']);
    });

    it('releases held buttons when the pointer leaves', () => {
      const { sink, capture } = setup();
      capture.handleButton(button('mousedown', 0, 600, 300));
      capture.handleButton(button('mousedown', 2, 600, 300));
      capture.handleLeave();
      expect(sink.log.filter((l) => !l.startsWith('move'))).toEqual([
        '+left',
        '+right',
        '-left',
        '-right',
      ]);
      expect(sink.pressedButtons.size).toBe(0);
    });

    it('suppresses the context menu', () => {
      const { capture } = setup();
      const menu = { prevented: false, preventDefault: () => (menu.prevented = true) };
      capture.handleContextMenu(menu);
      expect(menu.prevented).toBe(true);
    });
  });

  describe('relative mode', () => {
    it('asks for the pointer lock on a click and does not send that click', () => {
      const { sink, capture } = setup({ absolute: false });
      expect(capture.handleButton(button('mousedown', 0))).toBe(true);
      expect(capture.handleButton(button('mouseup', 0))).toBe(false);
      capture.handleMove({ clientX: 0, clientY: 0, movementX: 5, movementY: 5 });
      expect(sink.log).toEqual([]);
    });

    it('scales by relative_sense / 10, clamps to ±127 and batches with squash', () => {
      const { sink, capture } = setup({ absolute: false, relativeSense: 20, pollingMs: 20 });
      capture.setPointerLocked(true);
      capture.handleMove({ clientX: 0, clientY: 0, movementX: 999, movementY: 999 }); // dropped
      capture.handleMove({ clientX: 0, clientY: 0, movementX: 3, movementY: -2 });
      capture.handleMove({ clientX: 0, clientY: 0, movementX: 100, movementY: 1 });
      capture.handleMove({ clientX: 0, clientY: 0, movementX: -1, movementY: -200 });
      vi.advanceTimersByTime(20);
      expect(sink.log).toEqual(['rel* 6,-4', 'rel* 127,2 -2,-127']);
    });

    it('carries fractions of a unit at low sensitivity', () => {
      const { sink, capture } = setup({ absolute: false, relativeSense: 5 });
      capture.setPointerLocked(true);
      capture.handleMove({ clientX: 0, clientY: 0, movementX: 0, movementY: 0 }); // the dropped one
      for (let i = 0; i < 4; i += 1) {
        capture.handleMove({ clientX: 0, clientY: 0, movementX: 1, movementY: 0 });
        vi.advanceTimersByTime(10);
      }
      expect(sink.log).toEqual(['rel* 1,0', 'rel* 1,0']);
    });

    it('sends clicks while locked and releases buttons when the lock is lost', () => {
      const { sink, capture } = setup({ absolute: false });
      capture.setPointerLocked(true);
      capture.handleButton(button('mousedown', 0));
      capture.setPointerLocked(false);
      expect(sink.log).toEqual(['+left', '-left']);
    });

    it('ignores the absolute moves of an unlocked pointer', () => {
      const { sink, capture } = setup({ absolute: false });
      capture.handleMove({ clientX: 600, clientY: 300, movementX: 4, movementY: 4 });
      expect(sink.log).toEqual([]);
    });
  });

  describe('wheel', () => {
    it('reports -sign(delta) * scroll_rate per axis in STANDARD', () => {
      expect(wheelReport(0, 100, 5, 'STANDARD')).toEqual({ dx: 0, dy: -5 });
      expect(wheelReport(0, -3, 5, 'STANDARD')).toEqual({ dx: 0, dy: 5 });
      expect(wheelReport(40, 0, 7, 'STANDARD')).toEqual({ dx: -7, dy: 0 });
    });

    it('reverses vertical, horizontal or both', () => {
      expect(wheelReport(10, 10, 5, 'VERTICAL')).toEqual({ dx: -5, dy: 5 });
      expect(wheelReport(10, 10, 5, 'HORIZONTAL')).toEqual({ dx: 5, dy: -5 });
      expect(wheelReport(10, 10, 5, 'BOTH')).toEqual({ dx: 5, dy: 5 });
    });

    it('keeps the rate within ±127', () => {
      expect(wheelReport(0, 1, 500, 'STANDARD')).toEqual({ dx: 0, dy: -127 });
    });

    it('sends one report per poll interval and prevents page scrolling', () => {
      const { sink, capture } = setup({ pollingMs: 50, scrollRate: 3 });
      const first = wheel(0, 120);
      capture.handleWheel(first);
      capture.handleWheel(wheel(0, 4));
      capture.handleWheel(wheel(0, 4));
      expect(sink.log).toEqual(['wheel 0,-3']);
      vi.advanceTimersByTime(50);
      expect(sink.log).toEqual(['wheel 0,-3', 'wheel 0,-3']);
      vi.advanceTimersByTime(200);
      expect(sink.log).toHaveLength(2);
      expect(first.prevented).toBe(true);
    });

    it('reports nothing for deltas that cancel out', () => {
      const { sink, capture } = setup({ pollingMs: 50 });
      capture.handleWheel(wheel(0, 10));
      capture.handleWheel(wheel(0, 5));
      capture.handleWheel(wheel(0, -5));
      vi.advanceTimersByTime(50);
      expect(sink.log).toEqual(['wheel 0,-5']);
    });
  });

  it('mouse_control=false disables capture and releases held buttons', () => {
    const { sink, capture } = setup();
    capture.handleButton(button('mousedown', 0, 600, 300));
    capture.setEnabled(false);
    const down = button('mousedown', 2, 600, 300);
    const scroll = wheel(0, 1);
    capture.handleButton(down);
    capture.handleMove({ clientX: 100, clientY: 50 });
    capture.handleWheel(scroll);
    vi.advanceTimersByTime(100);
    expect(sink.log).toEqual(['move 0,0', '+left', '-left']);
    expect(down.prevented || scroll.prevented).toBe(false);
  });

  describe('attach', () => {
    function env() {
      const doc = Object.assign(new EventTarget(), {
        pointerLockElement: null as Element | null,
        exited: 0,
        exitPointerLock() {
          doc.exited += 1;
          doc.pointerLockElement = null;
          doc.dispatchEvent(new Event('pointerlockchange'));
        },
      });
      return { doc, environment: { document: doc } as unknown as MouseEnvironment };
    }

    it('requests the pointer lock on a click in relative mode and follows its changes', () => {
      const { sink, capture } = setup({ absolute: false });
      const element = document.createElement('div');
      const requested = vi.fn(() => Promise.resolve());
      element.requestPointerLock = requested;
      const { doc, environment } = env();
      const detach = capture.attach(element, environment);
      element.dispatchEvent(new MouseEvent('mousedown', { button: 0 }));
      expect(requested).toHaveBeenCalledTimes(1);
      doc.pointerLockElement = element;
      doc.dispatchEvent(new Event('pointerlockchange'));
      expect(capture.isLocked).toBe(true);
      element.dispatchEvent(new MouseEvent('mousedown', { button: 0 }));
      expect(sink.log).toEqual(['+left']);
      // Back to absolute: the pointer is handed back, the held button released.
      capture.setSettings({ absolute: true });
      expect(doc.exited).toBe(1);
      expect(capture.isLocked).toBe(false);
      expect(sink.log).toEqual(['+left', '-left']);
      detach();
    });

    it('prevents the context menu and page scrolling on the element', () => {
      const { capture } = setup();
      const element = document.createElement('div');
      const detach = capture.attach(element, env().environment);
      const menu = new MouseEvent('contextmenu', { cancelable: true });
      element.dispatchEvent(menu);
      const scroll = new WheelEvent('wheel', { deltaY: 10, cancelable: true });
      element.dispatchEvent(scroll);
      expect(menu.defaultPrevented).toBe(true);
      expect(scroll.defaultPrevented).toBe(true);
      detach();
      const after = new MouseEvent('contextmenu', { cancelable: true });
      element.dispatchEvent(after);
      expect(after.defaultPrevented).toBe(false);
    });
  });
});
