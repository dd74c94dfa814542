import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeHidFrame } from '@kvm/protocol/hid/codec';
import {
  HID_KEEPALIVE_INTERVAL_MS,
  HID_OP_KEEPALIVE,
  HID_OP_RELEASE_ALL,
} from '@kvm/protocol/hid/state';
import type { InputChannel } from '../input-channel';
import { HidSender } from './hid-sender';

/** A data channel fake that records the frames it carries. */
class FakeChannel implements InputChannel {
  isOpen = true;
  failSend = false;
  readonly frames: number[][] = [];
  send(frame: Uint8Array): boolean {
    if (!this.isOpen || this.failSend) return false;
    this.frames.push([...frame]);
    return true;
  }
  subscribe(): () => void {
    return () => undefined;
  }
}

class FakeSocket {
  open = true;
  readonly frames: number[][] = [];
  sendBinary(data: Uint8Array): boolean {
    if (!this.open) return false;
    this.frames.push([...data]);
    return true;
  }
}

const bytes = (text: string) => [...text].map((c) => c.charCodeAt(0));
const KEEPALIVE = [HID_OP_KEEPALIVE];
const RELEASE_ALL = [HID_OP_RELEASE_ALL];

describe('HidSender', () => {
  let channel: FakeChannel | null;
  let socket: FakeSocket;
  let sender: HidSender;

  beforeEach(() => {
    vi.useFakeTimers();
    channel = new FakeChannel();
    socket = new FakeSocket();
    sender = new HidSender({ channel: () => channel, socket });
  });
  afterEach(() => {
    sender.dispose();
    vi.useRealTimers();
  });

  describe('routing', () => {
    it('uses the data channel while it is open', () => {
      sender.move(0, 0);
      expect(channel?.frames).toEqual([[0x03, 0, 0, 0, 0]]);
      expect(socket.frames).toEqual([]);
    });

    it('uses the event socket when the channel is closed or missing', () => {
      channel!.isOpen = false;
      sender.wheel(0, 5);
      channel = null;
      sender.relative(-3, 200);
      expect(socket.frames).toEqual([
        [0x05, 0x00, 0x00, 0x05],
        [0x04, 0x00, 0xfd, 0x7f], // clamped to +127
      ]);
    });

    it('falls back to the socket when the channel closes between check and send', () => {
      channel!.failSend = true;
      expect(sender.move(-32768, 32767)).toBe(true);
      expect(socket.frames).toEqual([[0x03, 0x80, 0x00, 0x7f, 0xff]]);
    });

    it('keeps a hold that began on the socket there until nothing is held', () => {
      channel!.isOpen = false;
      sender.key('ShiftLeft', true);
      channel!.isOpen = true; // the data channel opens mid-hold
      sender.key('KeyA', true);
      sender.key('KeyA', false);
      sender.move(1, 1);
      sender.key('ShiftLeft', false);
      expect(channel!.frames).toEqual([]);
      expect(socket.frames.filter((f) => f[0] !== 0x07)).toHaveLength(5);
      sender.key('KeyB', true);
      expect(channel!.frames[0]).toEqual([0x01, 0x01, ...bytes('KeyB')]);
      expect(socket.frames.filter((f) => f[0] !== 0x07)).toHaveLength(5);
    });

    it('says false when nothing could carry the frame', () => {
      channel = null;
      socket.open = false;
      expect(sender.move(1, 1)).toBe(false);
    });
  });

  it('sends key frames by web name and does not resend a held key', () => {
    channel = null;
    sender.key('KeyA', true);
    sender.key('KeyA', true); // the browser's own repeat must not double the press
    sender.key('KeyA', false);
    const keyFrames = socket.frames.filter((f) => f[0] === 0x01);
    expect(keyFrames).toEqual([
      [0x01, 0x01, ...bytes('KeyA')],
      [0x01, 0x00, ...bytes('KeyA')],
    ]);
    expect(decodeHidFrame(Uint8Array.from(keyFrames[0]!))).toEqual({
      type: 'key',
      key: 'KeyA',
      state: true,
      finish: false,
    });
  });

  it('tracks what is held and tells subscribers', () => {
    const seen: string[][] = [];
    sender.subscribe(() => seen.push([...sender.pressedKeys]));
    const before = sender.pressedKeys;
    sender.key('ShiftLeft', true);
    sender.key('KeyB', true);
    expect(sender.pressedKeys).not.toBe(before);
    expect([...sender.pressedKeys]).toEqual(['ShiftLeft', 'KeyB']);
    expect(sender.getSnapshot().keys).toBe(sender.pressedKeys);
    sender.key('KeyB', false);
    sender.mouseButton('left', true);
    expect([...sender.pressedButtons]).toEqual(['left']);
    expect(seen).toEqual([['ShiftLeft'], ['ShiftLeft', 'KeyB'], ['ShiftLeft'], ['ShiftLeft']]);
  });

  it('taps a shortcut: presses in order, releases in reverse', () => {
    sender.tap(['ControlLeft', 'AltLeft', 'Delete']);
    const keys = channel!.frames
      .filter((f) => f[0] === 0x01)
      .map((f) => `${f[1] ? '+' : '-'}${String.fromCharCode(...f.slice(2))}`);
    expect(keys).toEqual([
      '+ControlLeft',
      '+AltLeft',
      '+Delete',
      '-Delete',
      '-AltLeft',
      '-ControlLeft',
    ]);
    expect(sender.pressedKeys.size).toBe(0);
  });

  it('releaseAll sends a key-up for every key and button, then 0x06, and clears', () => {
    sender.key('ControlLeft', true);
    sender.key('KeyC', true);
    sender.mouseButton('right', true);
    channel!.frames.length = 0;
    sender.releaseAll();
    expect(channel!.frames).toEqual([
      [0x01, 0x00, ...bytes('KeyC')],
      [0x01, 0x00, ...bytes('ControlLeft')],
      [0x02, 0x00, ...bytes('right')],
      RELEASE_ALL,
    ]);
    expect(sender.pressedKeys.size).toBe(0);
    expect(sender.pressedButtons.size).toBe(0);
  });

  it('releaseAll with nothing held still sends 0x06', () => {
    sender.releaseAll();
    expect(channel!.frames).toEqual([RELEASE_ALL]);
  });

  describe('keepalive', () => {
    const keepalives = () => channel!.frames.filter((f) => f.length === 1 && f[0] === 0x07).length;

    it('goes out at once and every 250 ms while something is held, then stops', () => {
      expect(HID_KEEPALIVE_INTERVAL_MS).toBe(250);
      sender.key('KeyA', true);
      expect(channel!.frames).toEqual([[0x01, 0x01, ...bytes('KeyA')], KEEPALIVE]);
      vi.advanceTimersByTime(249);
      expect(keepalives()).toBe(1);
      vi.advanceTimersByTime(1);
      expect(keepalives()).toBe(2);
      vi.advanceTimersByTime(750);
      expect(keepalives()).toBe(5);
      sender.key('KeyA', false);
      vi.advanceTimersByTime(2000);
      expect(keepalives()).toBe(5);
    });

    it('keeps one timer across several held keys and buttons', () => {
      sender.key('ShiftLeft', true);
      sender.mouseButton('left', true);
      sender.key('KeyA', true);
      expect(keepalives()).toBe(1);
      vi.advanceTimersByTime(500);
      expect(keepalives()).toBe(3);
      sender.key('KeyA', false);
      sender.key('ShiftLeft', false);
      vi.advanceTimersByTime(250);
      expect(keepalives()).toBe(4); // the button is still held
      sender.mouseButton('left', false);
      vi.advanceTimersByTime(1000);
      expect(keepalives()).toBe(4);
    });

    it('stops after releaseAll', () => {
      sender.key('KeyA', true);
      sender.releaseAll();
      vi.advanceTimersByTime(1000);
      expect(keepalives()).toBe(1);
    });

    it('is not sent for moves and wheel alone', () => {
      sender.move(10, 10);
      sender.wheel(0, 1);
      vi.advanceTimersByTime(1000);
      expect(keepalives()).toBe(0);
    });

    it('accepts injected timers', () => {
      const ticks: Array<() => void> = [];
      const cleared: unknown[] = [];
      const own = new HidSender({
        channel: () => null,
        socket,
        timers: {
          setInterval: (fn) => ticks.push(fn),
          clearInterval: (handle) => cleared.push(handle),
        },
      });
      own.key('KeyA', true);
      ticks[0]?.();
      own.key('KeyA', false);
      expect(socket.frames.filter((f) => f[0] === 0x07)).toHaveLength(2);
      expect(cleared).toEqual([1]);
    });
  });
});
