import { describe, expect, it } from 'vitest';
import { FramePresenter, type CanvasLike } from './h264-direct-presenter';
import { FakeCanvas, FakeFrame } from './h264-direct-test-kit';

function presenter(options: { scheduled?: boolean; running?: () => boolean } = {}) {
  const callbacks: Array<() => void> = [];
  const drawn: boolean[] = [];
  const painted: number[] = [];
  const p = new FramePresenter({
    requestFrame: options.scheduled === false ? null : (cb) => callbacks.push(cb),
    cancelFrame: () => callbacks.splice(0),
    running: options.running ?? (() => true),
    drawn: (presented) => drawn.push(presented),
    painted: () => painted.push(drawn.length),
  });
  return { p, callbacks, drawn, painted };
}

describe('FramePresenter', () => {
  it('draws the newest frame on the next animation frame, sized to it, and closes it', () => {
    const { p, callbacks, drawn } = presenter();
    const canvas = new FakeCanvas();
    p.attach(canvas);
    p.schedule();
    p.schedule(); // one request at a time
    expect(callbacks).toHaveLength(1);
    const older = new FakeFrame();
    const newer = new FakeFrame(800, 600);
    expect(p.offer(older)).toBe(false);
    expect(p.offer(newer)).toBe(true); // overtaken: closed undrawn
    expect(older.closed).toBe(true);
    callbacks.shift()?.();
    expect(canvas.drawn).toEqual([newer]);
    expect([canvas.width, canvas.height]).toEqual([800, 600]);
    expect(newer.closed).toBe(true);
    expect(drawn).toEqual([true]);
    // asks for the next one while running (and one to say the canvas shows a picture)
    expect(callbacks).toHaveLength(2);
  });

  it('reports a frame it could not draw, closes it, and keeps no frame without a canvas', () => {
    const { p, drawn } = presenter({ scheduled: false });
    expect(p.scheduled).toBe(false);
    const frame = new FakeFrame();
    p.offer(frame);
    p.draw(); // no canvas: waits
    expect(drawn).toEqual([]);
    const broken: CanvasLike = {
      width: 0,
      height: 0,
      getContext: () => {
        throw new Error('context lost');
      },
    };
    p.attach(broken);
    expect(p.hasCanvas).toBe(true);
    p.draw();
    expect(drawn).toEqual([false]);
    expect(frame.closed).toBe(true);
    expect(p.discard()).toBe(false);
  });

  it('asks for no animation frame once stopped, and discards the waiting frame', () => {
    let running = true;
    const { p, callbacks, drawn } = presenter({ running: () => running });
    p.attach(new FakeCanvas());
    p.schedule();
    const frame = new FakeFrame();
    p.offer(frame);
    running = false;
    callbacks.shift()?.();
    expect(drawn).toEqual([]);
    expect(callbacks).toHaveLength(0);
    p.schedule();
    expect(callbacks).toHaveLength(0);
    expect(p.discard()).toBe(true);
    expect(frame.closed).toBe(true);
  });

  it('gives a canvas that replaces the pictured one a copy of its picture, and says it shows one', () => {
    const { p, drawn, painted } = presenter({ scheduled: false });
    const preview = new FakeCanvas();
    const view = new FakeCanvas();
    p.attach(preview);
    expect(painted).toEqual([]); // nothing to show yet
    p.offer(new FakeFrame(800, 600));
    p.draw();
    p.offer(new FakeFrame(800, 600));
    p.draw();
    expect(painted).toEqual([1]); // its first frame only
    p.attach(view); // a static screen: no new frame comes, the view is not left blank
    expect(view.drawn).toEqual([preview]);
    expect([view.width, view.height]).toEqual([800, 600]);
    expect(painted).toEqual([1, 2]);
    p.offer(new FakeFrame(800, 600));
    p.draw();
    expect(painted).toEqual([1, 2]); // the view showed a picture already
    expect(drawn).toEqual([true, true, true]);

    p.attach(null);
    p.attach(view); // back to the canvas that shows the picture: nothing to copy
    expect(view.drawn).toHaveLength(2);
    expect(painted).toEqual([1, 2, 3]);
    p.forget(view); // it left the page: no copy from it
    const next = new FakeCanvas();
    p.attach(next);
    expect(next.drawn).toEqual([]);
    expect(painted).toEqual([1, 2, 3]);
  });

  it('with a scheduler, says a canvas shows a picture on the animation frame after the drawing', () => {
    const { p, callbacks, painted } = presenter();
    const preview = new FakeCanvas();
    const view = new FakeCanvas();
    p.attach(preview);
    p.schedule();
    p.offer(new FakeFrame());
    callbacks.shift()?.(); // drawn here; the next frame is asked for, and the announcement
    expect(preview.drawn).toHaveLength(1);
    expect(painted).toEqual([]);
    expect(callbacks).toHaveLength(2);
    callbacks.splice(0).forEach((cb) => cb());
    expect(painted).toEqual([1]);
    p.attach(view); // copied now, said on the next frame
    expect(view.drawn).toEqual([preview]);
    expect(painted).toEqual([1]);
    callbacks.splice(0).forEach((cb) => cb());
    expect(painted).toEqual([1, 1]);
    // a canvas attached in between voids the announcement about the one before
    p.attach(preview);
    p.attach(null);
    callbacks.splice(0).forEach((cb) => cb());
    expect(painted).toEqual([1, 1]);
  });
});
