import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, type Rendered } from '../test/render';
import { GrowOnly } from './GrowOnly';

let view: Rendered | undefined;
afterEach(() => {
  view?.unmount();
  view = undefined;
});

describe('GrowOnly: a readout keeps its widest width', () => {
  it('grows with a wider text and keeps that width when the text gets narrower', async () => {
    const observed: Array<() => void> = [];
    vi.stubGlobal(
      'ResizeObserver',
      class {
        constructor(private readonly callback: () => void) {}
        observe(): void {
          observed.push(this.callback);
        }
        disconnect(): void {
          observed.splice(observed.indexOf(this.callback), 1);
        }
      },
    );
    try {
      view = await render(
        <GrowOnly>
          <span data-testid="readout">850 kbps · 60 fps</span>
        </GrowOnly>,
      );
      const outer = view.byTestId('readout')!.parentElement!;
      let width = 114;
      vi.spyOn(outer, 'getBoundingClientRect').mockImplementation(() => ({ width }) as DOMRect);
      const resized = (w: number) => {
        width = w;
        observed.forEach((callback) => callback());
      };
      resized(114);
      expect(outer.style.minWidth).toBe('114px');
      resized(129.4); // 1.2 Mbps: wider, rounded up
      expect(outer.style.minWidth).toBe('130px');
      resized(114); // narrower again: the width stays
      expect(outer.style.minWidth).toBe('130px');
      view.unmount();
      view = undefined;
      expect(observed).toHaveLength(0);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
