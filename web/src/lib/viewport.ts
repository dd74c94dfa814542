/**
 * Window size as a debounced store (SPEC 9 "Layout"): resize events settle for 300 ms before
 * subscribers hear of them, so layouts do not re-render on every animation frame of a drag.
 */
import {
  BREAKPOINT_LARGE,
  BREAKPOINT_MIDDLE,
  KEYBOARD_FORCE_FLOATING_MAX_HEIGHT,
  RESIZE_DEBOUNCE_MS,
  SMALL_SCREEN_MAX_WIDTH,
} from '@kvm/protocol/constants';

/** 'large' from 1920, 'middle' from 1366, 'small' below. */
export type ScreenSize = 'small' | 'middle' | 'large';

export interface Viewport {
  width: number;
  height: number;
  size: ScreenSize;
  /** SPEC 9: width of 800 or less. */
  isSmallScreen: boolean;
  /** SPEC 2/9: the virtual keyboard is forced to floating at a height of 600 or less. */
  forceFloatingKeyboard: boolean;
}

export function describeViewport(width: number, height: number): Viewport {
  return {
    width,
    height,
    size: width >= BREAKPOINT_LARGE ? 'large' : width >= BREAKPOINT_MIDDLE ? 'middle' : 'small',
    isSmallScreen: width <= SMALL_SCREEN_MAX_WIDTH,
    forceFloatingKeyboard: height <= KEYBOARD_FORCE_FLOATING_MAX_HEIGHT,
  };
}

export interface ViewportSource {
  readonly innerWidth: number;
  readonly innerHeight: number;
  addEventListener(type: 'resize', listener: () => void): void;
  removeEventListener(type: 'resize', listener: () => void): void;
}

export class ViewportStore {
  private readonly source: ViewportSource;
  private snapshot: Viewport;
  private readonly listeners = new Set<() => void>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(source: ViewportSource) {
    this.source = source;
    this.snapshot = describeViewport(source.innerWidth, source.innerHeight);
  }

  getSnapshot = (): Viewport => this.snapshot;

  subscribe = (listener: () => void): (() => void) => {
    if (this.listeners.size === 0) this.source.addEventListener('resize', this.onResize);
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) {
        this.source.removeEventListener('resize', this.onResize);
        clearTimeout(this.timer);
        this.timer = undefined;
      }
    };
  };

  private readonly onResize = (): void => {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const { innerWidth: width, innerHeight: height } = this.source;
      if (width === this.snapshot.width && height === this.snapshot.height) return;
      this.snapshot = describeViewport(width, height);
      for (const listener of this.listeners) listener();
    }, RESIZE_DEBOUNCE_MS);
  };
}

let shared: ViewportStore | null = null;

export function getViewportStore(): ViewportStore {
  shared ??= new ViewportStore(window);
  return shared;
}
