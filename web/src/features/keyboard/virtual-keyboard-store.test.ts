import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ViewportStore, type ViewportSource } from '../../lib/viewport';
import {
  KEYBOARD_MODE_STORAGE_KEY,
  KEYBOARD_OPEN_MODE_STORAGE_KEY,
  VirtualKeyInput,
  effectiveKeyboardMode,
  keyLevel,
  resetVirtualKeyboardForTests,
  setKeyboardMode,
  toggleKeyboard,
  useVirtualKeyboard,
  type KeyboardMode,
  type KeySink,
} from './virtual-keyboard-store';
import { CTRL_ALT_DEL } from '../../test/keys';

/** Records every key event, in order, as `code:down` / `code:up`. */
class RecordingSink implements KeySink {
  readonly events: string[] = [];
  key(code: string, pressed: boolean): void {
    this.events.push(`${code}:${pressed ? 'down' : 'up'}`);
  }
}

describe('effectiveKeyboardMode (SPEC 2 forced floating)', () => {
  const tall = { fullscreen: false, viewportHeight: 900, adding: false };

  it('shows the chosen mode in a tall window', () => {
    for (const chosen of ['floating', 'fixed', 'closed'] as KeyboardMode[]) {
      expect(effectiveKeyboardMode({ ...tall, chosen })).toBe(chosen);
    }
  });

  it('floats in fullscreen', () => {
    expect(effectiveKeyboardMode({ ...tall, chosen: 'fixed', fullscreen: true })).toBe('floating');
  });

  it('floats at a window height of 600 or less (SPEC 9)', () => {
    expect(effectiveKeyboardMode({ ...tall, chosen: 'fixed', viewportHeight: 601 })).toBe('fixed');
    expect(effectiveKeyboardMode({ ...tall, chosen: 'fixed', viewportHeight: 600 })).toBe(
      'floating',
    );
    expect(effectiveKeyboardMode({ ...tall, chosen: 'fixed', viewportHeight: 400 })).toBe(
      'floating',
    );
  });

  it('floats while a shortcut is being added, even when closed', () => {
    expect(effectiveKeyboardMode({ ...tall, chosen: 'fixed', adding: true })).toBe('floating');
    expect(effectiveKeyboardMode({ ...tall, chosen: 'closed', adding: true })).toBe('floating');
  });

  it('stays closed when closed and not adding, whatever forces floating', () => {
    expect(
      effectiveKeyboardMode({
        chosen: 'closed',
        fullscreen: true,
        viewportHeight: 300,
        adding: false,
      }),
    ).toBe('closed');
  });

  it('follows the debounced viewport: 300 ms after the last resize (SPEC 9)', () => {
    vi.useFakeTimers();
    try {
      let resize: (() => void) | undefined;
      const source: ViewportSource & { innerHeight: number } = {
        innerWidth: 1400,
        innerHeight: 900,
        addEventListener: (_type, listener) => {
          resize = listener;
        },
        removeEventListener: () => undefined,
      };
      const viewport = new ViewportStore(source);
      const unsubscribe = viewport.subscribe(() => undefined);
      const mode = () =>
        effectiveKeyboardMode({
          chosen: 'fixed',
          fullscreen: false,
          adding: false,
          viewportHeight: viewport.getSnapshot().height,
        });
      expect(mode()).toBe('fixed');
      source.innerHeight = 600;
      resize?.();
      vi.advanceTimersByTime(299);
      expect(mode()).toBe('fixed');
      vi.advanceTimersByTime(1);
      expect(mode()).toBe('floating');
      unsubscribe();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('display mode choice', () => {
  beforeEach(() => {
    localStorage.clear();
    resetVirtualKeyboardForTests();
  });

  it('starts closed and floating is where the toggle opens it first', () => {
    expect(useVirtualKeyboard.getState()).toMatchObject({ chosen: 'closed', openMode: 'floating' });
    toggleKeyboard();
    expect(useVirtualKeyboard.getState().chosen).toBe('floating');
    toggleKeyboard();
    expect(useVirtualKeyboard.getState().chosen).toBe('closed');
  });

  it('remembers the choice in local storage, and reopens where it was', () => {
    setKeyboardMode('fixed');
    expect(localStorage.getItem(KEYBOARD_MODE_STORAGE_KEY)).toBe('fixed');
    toggleKeyboard();
    expect(localStorage.getItem(KEYBOARD_MODE_STORAGE_KEY)).toBe('closed');
    expect(localStorage.getItem(KEYBOARD_OPEN_MODE_STORAGE_KEY)).toBe('fixed');
    resetVirtualKeyboardForTests(); // a new page load
    expect(useVirtualKeyboard.getState()).toMatchObject({ chosen: 'closed', openMode: 'fixed' });
    toggleKeyboard();
    expect(useVirtualKeyboard.getState().chosen).toBe('fixed');
  });

  it('ignores a stored value it does not know', () => {
    localStorage.setItem(KEYBOARD_MODE_STORAGE_KEY, 'sideways');
    resetVirtualKeyboardForTests();
    expect(useVirtualKeyboard.getState().chosen).toBe('closed');
  });
});

describe('VirtualKeyInput (latching modifiers)', () => {
  let sink: RecordingSink;
  let input: VirtualKeyInput;
  beforeEach(() => {
    sink = new RecordingSink();
    input = new VirtualKeyInput(sink);
  });
  afterEach(() => input.releaseAll());

  const click = (code: string) => {
    input.press(code);
    input.release(code);
  };

  it('a plain key is pressed and released', () => {
    click('KeyA');
    expect(sink.events).toEqual(['KeyA:down', 'KeyA:up']);
    expect(input.getSnapshot()).toEqual({ latched: [], down: null });
  });

  it('Ctrl, Alt, Del sends Ctrl+Alt+Del and leaves nothing held', () => {
    click('ControlLeft');
    click('AltLeft');
    expect(input.getSnapshot().latched).toEqual(['ControlLeft', 'AltLeft']);
    click('Delete');
    expect(sink.events).toEqual(CTRL_ALT_DEL);
    expect(input.getSnapshot().latched).toEqual([]);
  });

  it('the latch lasts one key: the next key goes alone', () => {
    click('ShiftLeft');
    click('KeyA');
    click('KeyB');
    expect(sink.events).toEqual([
      'ShiftLeft:down',
      'KeyA:down',
      'KeyA:up',
      'ShiftLeft:up',
      'KeyB:down',
      'KeyB:up',
    ]);
  });

  it('clicking a latched modifier again releases it', () => {
    click('ControlLeft');
    click('ShiftLeft');
    click('ControlLeft');
    expect(input.getSnapshot().latched).toEqual(['ShiftLeft']);
    click('KeyT');
    expect(sink.events).toEqual([
      'ControlLeft:down',
      'ShiftLeft:down',
      'ControlLeft:up',
      'KeyT:down',
      'KeyT:up',
      'ShiftLeft:up',
    ]);
  });

  it('holds a key while the pointer is down (the remote repeats it)', () => {
    click('ControlLeft');
    input.press('KeyZ');
    expect(sink.events).toEqual(['ControlLeft:down', 'KeyZ:down']);
    expect(input.getSnapshot()).toEqual({ latched: ['ControlLeft'], down: 'KeyZ' });
    input.release('KeyZ');
    expect(sink.events.slice(2)).toEqual(['KeyZ:up', 'ControlLeft:up']);
  });

  it('a second key while one is down ends the first one; stray releases send nothing', () => {
    input.press('KeyA');
    input.press('KeyB');
    input.release('KeyA');
    input.release('KeyB');
    input.release('KeyB');
    input.release('ShiftLeft');
    expect(sink.events).toEqual(['KeyA:down', 'KeyA:up', 'KeyB:down', 'KeyB:up']);
  });

  it('releaseAll releases the key down and the latched, last latched first', () => {
    click('ControlLeft');
    click('AltRight');
    input.press('KeyE');
    input.releaseAll();
    expect(sink.events).toEqual([
      'ControlLeft:down',
      'AltRight:down',
      'KeyE:down',
      'KeyE:up',
      'AltRight:up',
      'ControlLeft:up',
    ]);
    expect(input.getSnapshot()).toEqual({ latched: [], down: null });
  });

  it('while capturing (adding a shortcut), keys go to the capture and nothing is sent', () => {
    click('ShiftLeft');
    const picked: string[] = [];
    input.setCapture((code) => picked.push(code));
    expect(sink.events).toEqual(['ShiftLeft:down', 'ShiftLeft:up']);
    click('ControlLeft');
    click('AltLeft');
    click('Delete');
    expect(picked).toEqual(['ControlLeft', 'AltLeft', 'Delete']);
    expect(sink.events).toHaveLength(2);
    input.setCapture(null);
    click('KeyA');
    expect(sink.events.slice(2)).toEqual(['KeyA:down', 'KeyA:up']);
  });

  it('forgets what the sender released by itself (focus lost)', () => {
    const heard = vi.fn();
    input.subscribe(heard);
    click('ControlLeft');
    click('ShiftLeft');
    input.syncHeld(new Set(['ShiftLeft']));
    expect(input.getSnapshot().latched).toEqual(['ShiftLeft']);
    input.syncHeld(new Set());
    expect(input.getSnapshot()).toEqual({ latched: [], down: null });
    const calls = heard.mock.calls.length;
    input.syncHeld(new Set());
    expect(heard.mock.calls.length).toBe(calls);
  });
});

describe('keyLevel', () => {
  it('shows the Shift, AltGr or both levels when they are latched', () => {
    expect(keyLevel([])).toBe('base');
    expect(keyLevel(['ControlLeft'])).toBe('base');
    expect(keyLevel(['ShiftRight'])).toBe('shift');
    expect(keyLevel(['AltRight'])).toBe('altgr');
    expect(keyLevel(['AltLeft'])).toBe('base');
    expect(keyLevel(['AltRight', 'ShiftLeft'])).toBe('shiftAltgr');
  });
});
