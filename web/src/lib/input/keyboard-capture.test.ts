import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ALTGR_WINDOW_MS,
  detectPlatform,
  KeyboardCapture,
  type KeyboardEnvironment,
  type KeyEventLike,
  type KeySink,
  type Platform,
} from './keyboard-capture';

/** Records what the capture sends; holds keys like the HidSender (a held key is not re-pressed). */
class FakeSink implements KeySink {
  readonly log: string[] = [];
  pressedKeys = new Set<string>();
  key(code: string, pressed: boolean): boolean {
    if (pressed && this.pressedKeys.has(code)) return false;
    if (pressed) this.pressedKeys.add(code);
    else this.pressedKeys.delete(code);
    this.log.push(`${pressed ? '+' : '-'}${code}`);
    return true;
  }
  releaseAll(): void {
    this.pressedKeys.clear();
    this.log.push('releaseAll');
  }
}

interface FakeKey extends KeyEventLike {
  prevented: boolean;
}

function key(type: 'keydown' | 'keyup', code: string, extra: Partial<KeyEventLike> = {}): FakeKey {
  const event: FakeKey = {
    type,
    code,
    repeat: false,
    timeStamp: 0,
    prevented: false,
    preventDefault() {
      event.prevented = true;
    },
    ...extra,
  };
  return event;
}

const down = (code: string, extra?: Partial<KeyEventLike>) => key('keydown', code, extra);
const up = (code: string, extra?: Partial<KeyEventLike>) => key('keyup', code, extra);

function setup(platform: Platform) {
  const sink = new FakeSink();
  const capture = new KeyboardCapture({ sink, platform });
  return { sink, capture };
}

describe('KeyboardCapture', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('sends presses and releases by web name and prevents the browser default', () => {
    const { sink, capture } = setup('other');
    const a = down('KeyA');
    capture.handleKey(a);
    capture.handleKey(up('KeyA'));
    expect(sink.log).toEqual(['+KeyA', '-KeyA']);
    expect(a.prevented).toBe(true);
  });

  it('ignores key repeat, still preventing the default', () => {
    const { sink, capture } = setup('other');
    capture.handleKey(down('Backspace'));
    const repeat = down('Backspace', { repeat: true });
    capture.handleKey(repeat);
    capture.handleKey(down('Backspace', { repeat: true }));
    capture.handleKey(up('Backspace'));
    expect(sink.log).toEqual(['+Backspace', '-Backspace']);
    expect(repeat.prevented).toBe(true);
  });

  it('drops events with an empty or Unidentified code and leaves them to the browser', () => {
    const { sink, capture } = setup('other');
    const empty = down('');
    const unidentified = down('Unidentified');
    capture.handleKey(empty);
    capture.handleKey(unidentified);
    expect(sink.log).toEqual([]);
    expect(empty.prevented).toBe(false);
    expect(unidentified.prevented).toBe(false);
  });

  it('drops keys the device does not know', () => {
    const { sink, capture } = setup('other');
    const media = down('MediaPlayPause');
    capture.handleKey(media);
    capture.handleKey(down('Fn'));
    expect(sink.log).toEqual([]);
    expect(media.prevented).toBe(false);
  });

  it('ignores event types other than keydown and keyup', () => {
    const { sink, capture } = setup('other');
    capture.handleKey(key('keydown', 'KeyA', { type: 'keypress' }));
    expect(sink.log).toEqual([]);
  });

  describe('AltGr on Windows', () => {
    it('drops the fake ControlLeft that comes with AltRight at the same timeStamp', () => {
      const { sink, capture } = setup('windows');
      capture.handleKey(down('ControlLeft', { timeStamp: 1000.5 }));
      capture.handleKey(down('AltRight', { timeStamp: 1000.5 }));
      capture.handleKey(down('KeyQ', { timeStamp: 1100 }));
      capture.handleKey(up('KeyQ', { timeStamp: 1200 }));
      capture.handleKey(up('ControlLeft', { timeStamp: 1300 }));
      capture.handleKey(up('AltRight', { timeStamp: 1300 }));
      vi.advanceTimersByTime(1000);
      // The fake Ctrl's keyup is a release of a key not held: the device ignores it.
      expect(sink.log).toEqual(['+AltRight', '+KeyQ', '-KeyQ', '-ControlLeft', '-AltRight']);
      expect(sink.pressedKeys.size).toBe(0);
    });

    it('keeps a real ControlLeft followed by another key, in order', () => {
      const { sink, capture } = setup('windows');
      capture.handleKey(down('ControlLeft', { timeStamp: 10 }));
      expect(sink.log).toEqual([]); // held back for a moment
      capture.handleKey(down('KeyC', { timeStamp: 11 }));
      expect(sink.log).toEqual(['+ControlLeft', '+KeyC']);
    });

    it('keeps a real Ctrl+AltRight pressed at different times', () => {
      const { sink, capture } = setup('windows');
      capture.handleKey(down('ControlLeft', { timeStamp: 10 }));
      capture.handleKey(down('AltRight', { timeStamp: 15 }));
      expect(sink.log).toEqual(['+ControlLeft', '+AltRight']);
    });

    it('sends a ControlLeft held alone once the window has passed', () => {
      const { sink, capture } = setup('windows');
      capture.handleKey(down('ControlLeft', { timeStamp: 10 }));
      vi.advanceTimersByTime(ALTGR_WINDOW_MS - 1);
      expect(sink.log).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(sink.log).toEqual(['+ControlLeft']);
      // A late AltRight with the same timeStamp changes nothing now.
      capture.handleKey(down('AltRight', { timeStamp: 10 }));
      expect(sink.log).toEqual(['+ControlLeft', '+AltRight']);
    });

    it('keeps a quick ControlLeft tap', () => {
      const { sink, capture } = setup('windows');
      capture.handleKey(down('ControlLeft', { timeStamp: 10 }));
      capture.handleKey(up('ControlLeft', { timeStamp: 12 }));
      vi.advanceTimersByTime(100);
      expect(sink.log).toEqual(['+ControlLeft', '-ControlLeft']);
    });

    it('is not applied elsewhere', () => {
      const { sink, capture } = setup('other');
      capture.handleKey(down('ControlLeft', { timeStamp: 5 }));
      capture.handleKey(down('AltRight', { timeStamp: 5 }));
      expect(sink.log).toEqual(['+ControlLeft', '+AltRight']);
    });
  });

  describe('Meta on macOS', () => {
    it('releases keys pressed under Meta when Meta is released', () => {
      const { sink, capture } = setup('mac');
      capture.handleKey(down('MetaLeft'));
      capture.handleKey(down('ShiftLeft'));
      capture.handleKey(down('KeyZ'));
      // No keyup of KeyZ comes while Meta is held.
      capture.handleKey(up('ShiftLeft'));
      capture.handleKey(up('MetaLeft'));
      expect(sink.log).toEqual([
        '+MetaLeft',
        '+ShiftLeft',
        '+KeyZ',
        '-ShiftLeft',
        '-KeyZ',
        '-MetaLeft',
      ]);
      expect(sink.pressedKeys.size).toBe(0);
    });

    it('sends a second press of the same key under Meta as release and press', () => {
      const { sink, capture } = setup('mac');
      capture.handleKey(down('MetaRight'));
      capture.handleKey(down('KeyZ'));
      capture.handleKey(down('KeyZ'));
      capture.handleKey(up('MetaRight'));
      expect(sink.log).toEqual(['+MetaRight', '+KeyZ', '-KeyZ', '+KeyZ', '-KeyZ', '-MetaRight']);
    });

    it('does not release twice a key whose keyup did arrive', () => {
      const { sink, capture } = setup('mac');
      capture.handleKey(down('MetaLeft'));
      capture.handleKey(down('KeyA'));
      capture.handleKey(up('KeyA'));
      capture.handleKey(up('MetaLeft'));
      expect(sink.log).toEqual(['+MetaLeft', '+KeyA', '-KeyA', '-MetaLeft']);
    });

    it('leaves keys pressed without Meta alone', () => {
      const { sink, capture } = setup('mac');
      capture.handleKey(down('KeyA'));
      capture.handleKey(down('MetaLeft'));
      capture.handleKey(up('MetaLeft'));
      expect(sink.log).toEqual(['+KeyA', '+MetaLeft', '-MetaLeft']);
      expect([...sink.pressedKeys]).toEqual(['KeyA']);
    });
  });

  describe('CapsLock on macOS', () => {
    it('sends a press and release for the lock keydown and for the unlock keyup', () => {
      const { sink, capture } = setup('mac');
      capture.handleKey(down('CapsLock'));
      capture.handleKey(up('CapsLock'));
      expect(sink.log).toEqual(['+CapsLock', '-CapsLock', '+CapsLock', '-CapsLock']);
    });

    it('is a normal key elsewhere', () => {
      const { sink, capture } = setup('windows');
      capture.handleKey(down('CapsLock'));
      capture.handleKey(up('CapsLock'));
      expect(sink.log).toEqual(['+CapsLock', '-CapsLock']);
    });
  });

  it('keyboard_control=false disables capture and releases what is held', () => {
    const { sink, capture } = setup('other');
    capture.handleKey(down('KeyA'));
    capture.setEnabled(false);
    const event = down('KeyB');
    capture.handleKey(event);
    expect(sink.log).toEqual(['+KeyA', 'releaseAll']);
    expect(event.prevented).toBe(false);
    capture.setEnabled(true);
    capture.handleKey(down('KeyB'));
    expect(sink.log).toEqual(['+KeyA', 'releaseAll', '+KeyB']);
  });

  describe('attach', () => {
    class FakeTarget extends EventTarget {}

    function env(options: { lock?: boolean } = {}) {
      const win = new EventTarget();
      const doc = Object.assign(new EventTarget(), {
        visibilityState: 'visible' as DocumentVisibilityState,
        fullscreenElement: null as Element | null,
      });
      const calls: string[] = [];
      const keyboard = options.lock
        ? {
            lock: () => {
              calls.push('lock');
              return Promise.resolve();
            },
            unlock: () => calls.push('unlock'),
          }
        : undefined;
      const environment = {
        window: win,
        document: doc,
        navigator: { keyboard } as unknown as Navigator,
      } as unknown as KeyboardEnvironment;
      return { win, doc, calls, environment };
    }

    it('captures keys on the target and releases all on window blur and when hidden', () => {
      const { sink, capture } = setup('other');
      const target = new FakeTarget();
      const { win, doc, environment } = env();
      const detach = capture.attach(target, environment);
      target.dispatchEvent(Object.assign(new Event('keydown'), { code: 'KeyA', repeat: false }));
      win.dispatchEvent(new Event('blur'));
      doc.dispatchEvent(new Event('visibilitychange')); // still visible: nothing
      doc.visibilityState = 'hidden';
      doc.dispatchEvent(new Event('visibilitychange'));
      target.dispatchEvent(new Event('blur'));
      expect(sink.log).toEqual(['+KeyA', 'releaseAll', 'releaseAll', 'releaseAll']);
      detach();
      target.dispatchEvent(Object.assign(new Event('keydown'), { code: 'KeyB', repeat: false }));
      expect(sink.log.at(-1)).toBe('releaseAll');
      expect(sink.log).not.toContain('+KeyB');
    });

    it('locks the keyboard in fullscreen and unlocks on exit, when the API exists', () => {
      const { capture } = setup('other');
      const { doc, calls, environment } = env({ lock: true });
      const detach = capture.attach(new FakeTarget(), environment);
      expect(calls).toEqual([]);
      doc.fullscreenElement = {} as Element;
      doc.dispatchEvent(new Event('fullscreenchange'));
      expect(calls).toEqual(['lock']);
      capture.setEnabled(false); // keyboard_control off: Esc belongs to the browser again
      expect(calls).toEqual(['lock', 'unlock']);
      capture.setEnabled(true);
      doc.fullscreenElement = null;
      doc.dispatchEvent(new Event('fullscreenchange'));
      expect(calls).toEqual(['lock', 'unlock', 'lock', 'unlock']);
      detach();
      expect(calls).toHaveLength(4);
    });

    it('works without the Keyboard Lock API', () => {
      const { capture } = setup('other');
      const { doc, environment } = env();
      const detach = capture.attach(new FakeTarget(), environment);
      doc.fullscreenElement = {} as Element;
      expect(() => doc.dispatchEvent(new Event('fullscreenchange'))).not.toThrow();
      detach();
    });
  });
});

describe('detectPlatform', () => {
  it('tells macOS, Windows and the rest apart', () => {
    expect(detectPlatform({ platform: 'MacIntel' })).toBe('mac');
    expect(detectPlatform({ userAgentData: { platform: 'macOS' } })).toBe('mac');
    expect(detectPlatform({ platform: 'Win32' })).toBe('windows');
    expect(detectPlatform({ userAgentData: { platform: 'Windows' } })).toBe('windows');
    expect(detectPlatform({ platform: 'Linux x86_64', userAgent: 'X11; Linux' })).toBe('other');
    expect(detectPlatform({})).toBe('other');
  });
});
