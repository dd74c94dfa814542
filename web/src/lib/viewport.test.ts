import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RESIZE_DEBOUNCE_MS } from '@kvm/protocol/constants';
import { describeViewport, ViewportStore, type ViewportSource } from './viewport';

class FakeSource implements ViewportSource {
  innerWidth = 1920;
  innerHeight = 1080;
  private listener: (() => void) | null = null;
  addEventListener(_type: 'resize', listener: () => void) {
    this.listener = listener;
  }
  removeEventListener() {
    this.listener = null;
  }
  resize(width: number, height: number) {
    this.innerWidth = width;
    this.innerHeight = height;
    this.listener?.();
  }
  get listening() {
    return this.listener !== null;
  }
}

describe('describeViewport', () => {
  it('applies the SPEC 9 breakpoints', () => {
    expect(describeViewport(1920, 1080).size).toBe('large');
    expect(describeViewport(1919, 1080).size).toBe('middle');
    expect(describeViewport(1366, 768).size).toBe('middle');
    expect(describeViewport(1365, 768).size).toBe('small');
    expect(describeViewport(800, 700).isSmallScreen).toBe(true);
    expect(describeViewport(801, 700).isSmallScreen).toBe(false);
    expect(describeViewport(1000, 600).forceFloatingKeyboard).toBe(true);
    expect(describeViewport(1000, 601).forceFloatingKeyboard).toBe(false);
  });
});

describe('ViewportStore', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('publishes a resize only after 300 ms of quiet', () => {
    const source = new FakeSource();
    const store = new ViewportStore(source);
    const listener = vi.fn();
    const unsubscribe = store.subscribe(listener);
    source.resize(1200, 900);
    vi.advanceTimersByTime(RESIZE_DEBOUNCE_MS - 100);
    source.resize(700, 500);
    vi.advanceTimersByTime(RESIZE_DEBOUNCE_MS - 1);
    expect(listener).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(listener).toHaveBeenCalledTimes(1);
    expect(store.getSnapshot()).toMatchObject({ width: 700, isSmallScreen: true, size: 'small' });
    unsubscribe();
    expect(source.listening).toBe(false);
  });

  it('keeps the same snapshot object when the size did not change', () => {
    const source = new FakeSource();
    const store = new ViewportStore(source);
    const before = store.getSnapshot();
    store.subscribe(() => undefined);
    source.resize(1920, 1080);
    vi.advanceTimersByTime(RESIZE_DEBOUNCE_MS);
    expect(store.getSnapshot()).toBe(before);
  });
});
