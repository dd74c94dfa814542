import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { STATUS_BAR_MIN_HEIGHT, TOOLBAR_HEIGHT } from '@kvm/protocol/constants';
import { Emitter } from '../../lib/emitter';
import {
  canvasHasPicture,
  FirstFramePreview,
  PREVIEW_MAX_MS,
  PREVIEW_TEST_ID,
  type CanvasSource,
} from './first-frame-preview';

/** A track as far as the preview uses one: its state and its 'ended' event. */
class FakeTrack extends EventTarget {
  readyState: MediaStreamTrackState = 'live';

  end(): void {
    this.readyState = 'ended';
    this.dispatchEvent(new Event('ended'));
  }
}

const track = (): MediaStreamTrack => new FakeTrack() as unknown as MediaStreamTrack;

/** Direct H.264's stream as far as the preview uses it: one canvas attached at a time. */
class FakeDirect implements CanvasSource {
  attachedCanvas: HTMLCanvasElement | null = null;
  released = 0;
  private readonly emitter = new Emitter<{ painted: { canvas: unknown } }>();

  attachCanvas(canvas: HTMLCanvasElement | null): void {
    this.attachedCanvas = canvas;
  }

  releaseGoneCanvases(): void {
    this.released += 1;
  }

  on(type: 'painted', handler: (event: { canvas: unknown }) => void): () => void {
    return this.emitter.on(type, handler);
  }

  paint(canvas: unknown): void {
    this.emitter.emit('painted', { canvas });
  }
}
const shown = (): HTMLVideoElement[] => [
  ...document.querySelectorAll<HTMLVideoElement>(`[data-testid="${PREVIEW_TEST_ID}"]`),
];

let preview: FirstFramePreview;
let streams: MediaStreamTrack[];

beforeEach(() => {
  streams = [];
  // happy-dom plays no media: play() resolves at once here (the browser's own is in e2e)
  vi.spyOn(HTMLMediaElement.prototype, 'play').mockResolvedValue(undefined);
  preview = new FirstFramePreview({
    document: () => document,
    stream: (t) => {
      streams.push(t);
      return new MediaStream();
    },
  });
});

/** Why the last preview went (its end mark's detail). */
function lastEnd(): unknown {
  return (performance.getEntriesByName('kvm:video:preview_end').at(-1) as PerformanceMark)?.detail;
}

afterEach(() => {
  preview.viewUnmount();
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('FirstFramePreview (issue 28: the remote screen before the console renders)', () => {
  it("plays the first track, muted and inert, over the view's place until the view presents", () => {
    const first = track();
    preview.setSource(first);
    const [video] = shown();
    expect(shown()).toHaveLength(1);
    expect(streams).toEqual([first]);
    expect(video!.muted).toBe(true);
    expect(video!.style.pointerEvents).toBe('none');
    expect(video!.style.top).toBe(`${TOOLBAR_HEIGHT}px`);
    expect(video!.style.bottom).toBe(`${STATUS_BAR_MIN_HEIGHT}px`);
    expect(HTMLMediaElement.prototype.play).toHaveBeenCalled();
    preview.setSource(first); // the same track again changes nothing
    expect(shown()).toHaveLength(1);
    preview.viewMount();
    expect(shown()).toHaveLength(1); // mounted is not yet presented: no black flash
    preview.viewPresented();
    expect(shown()).toHaveLength(0);
    expect(lastEnd()).toBe('view');
    expect(video!.srcObject).toBeNull();
    expect(preview.spent).toBe(true);
  });

  it('shows nothing once the view has mounted first, and only one preview per page load', () => {
    preview.viewMount();
    preview.setSource(track());
    expect(shown()).toHaveLength(0);

    const other = new FirstFramePreview({
      document: () => document,
      stream: () => new MediaStream(),
    });
    other.setSource(track());
    other.viewPresented();
    other.setSource(track()); // a later session's track (a reconnect): the view shows it
    expect(shown()).toHaveLength(0);
  });

  it('goes with the track: a new one, none, or one that ends', () => {
    const first = track();
    preview.setSource(first);
    preview.setSource(track());
    expect(shown()).toHaveLength(0);
    expect(lastEnd()).toBe('source');

    const again = new FirstFramePreview({
      document: () => document,
      stream: () => new MediaStream(),
    });
    const ending = new FakeTrack();
    again.setSource(ending as unknown as MediaStreamTrack);
    expect(shown()).toHaveLength(1);
    ending.end();
    expect(shown()).toHaveLength(0);
    expect(lastEnd()).toBe('ended');

    const none = new FirstFramePreview({
      document: () => document,
      stream: () => new MediaStream(),
    });
    none.setSource(track());
    none.setSource(null);
    expect(shown()).toHaveLength(0);
  });

  it('goes when the view unmounts, and after PREVIEW_MAX_MS whatever happens', () => {
    preview.setSource(track());
    preview.viewUnmount();
    expect(shown()).toHaveLength(0);
    expect(lastEnd()).toBe('unmount');

    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] }); // the marks stay real
    const stuck = new FirstFramePreview({
      document: () => document,
      stream: () => new MediaStream(),
    });
    stuck.setSource(track());
    vi.advanceTimersByTime(PREVIEW_MAX_MS - 1);
    expect(shown()).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(shown()).toHaveLength(0);
    expect(lastEnd()).toBe('bound');
  });

  it("firstFrame(): settles at the preview's first frame, at its end, or at once without one", async () => {
    await preview.firstFrame(); // none shows
    preview.setSource(track());
    let settled = false;
    const first = preview.firstFrame().then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    // happy-dom has no requestVideoFrameCallback: the first decoded data stands for it
    shown()[0]!.dispatchEvent(new Event('loadeddata'));
    await first;
    expect(shown()).toHaveLength(1); // presenting does not end it: the view does

    const other = new FirstFramePreview({
      document: () => document,
      stream: () => new MediaStream(),
    });
    other.setSource(track());
    const gone = other.firstFrame();
    other.viewUnmount();
    await gone;
  });

  it('an ended track never shows', () => {
    const ended = new FakeTrack();
    ended.readyState = 'ended';
    preview.setSource(ended as unknown as MediaStreamTrack);
    expect(shown()).toHaveLength(0);
  });

  it("direct H.264: draws in its own canvas until the view's canvas shows the picture", async () => {
    const direct = new FakeDirect();
    preview.setSource(direct);
    const [canvas] = shown();
    expect(canvas).toBeInstanceOf(HTMLCanvasElement);
    expect(direct.attachedCanvas).toBe(canvas);
    expect(canvas!.style.top).toBe(`${TOOLBAR_HEIGHT}px`);
    expect(canvas!.style.pointerEvents).toBe('none');
    let settled = false;
    const first = preview.firstFrame().then(() => (settled = true));
    direct.paint(document.createElement('canvas')); // another canvas's picture is not this one's
    await Promise.resolve();
    expect(settled).toBe(false);
    direct.paint(canvas);
    await first;

    // the view attaches its canvas (the stream copies the picture onto it), then says it shows
    const view = document.createElement('canvas');
    preview.viewMount();
    direct.attachCanvas(view);
    preview.viewPresented();
    expect(shown()).toHaveLength(0);
    expect(direct.attachedCanvas).toBe(view); // the view's canvas stays attached
    expect(direct.released).toBe(1); // the preview's canvas is let go of

    // a preview that ends while its canvas is still attached detaches it
    const other = new FirstFramePreview({
      document: () => document,
      stream: () => new MediaStream(),
    });
    const alone = new FakeDirect();
    other.setSource(alone);
    other.setSource(null);
    expect(alone.attachedCanvas).toBeNull();
    expect(alone.released).toBe(0); // its picture stays for a later canvas to copy
    expect(shown()).toHaveLength(0);

    // a stream that draws on a canvas already (the view's) gets no preview
    const busy = new FakeDirect();
    busy.attachedCanvas = view;
    new FirstFramePreview({ document: () => document, stream: () => new MediaStream() }).setSource(
      busy,
    );
    expect(shown()).toHaveLength(0);
  });
});

describe('canvasHasPicture (the page reads the direct view canvas before the preview goes)', () => {
  afterEach(() => vi.restoreAllMocks());

  /** A 1-pixel probe whose read gives `alpha`, as the page's copy of the canvas would. */
  function probeReading(alpha: number | 'throws') {
    const create = document.createElement.bind(document);
    const drawn: unknown[] = [];
    vi.spyOn(document, 'createElement').mockImplementation(((tag: string) => {
      if (tag !== 'canvas') return create(tag);
      const probe = create('canvas') as HTMLCanvasElement;
      probe.getContext = (() => ({
        drawImage: (...args: unknown[]) => {
          if (alpha === 'throws') throw new DOMException('gone', 'InvalidStateError');
          drawn.push(args);
        },
        getImageData: () => ({ data: new Uint8ClampedArray([0, 0, 0, alpha as number]) }),
      })) as unknown as HTMLCanvasElement['getContext'];
      return probe;
    }) as typeof document.createElement);
    return drawn;
  }

  function viewCanvas(width: number, height: number): HTMLCanvasElement {
    const canvas = document.createElement('canvas');
    canvas.width = width;
    canvas.height = height;
    return canvas;
  }

  it('says no while the copy is transparent, yes once it is opaque (one pixel read)', () => {
    const view = viewCanvas(1280, 720);
    probeReading(0);
    expect(canvasHasPicture(view)).toBe(false);
    vi.restoreAllMocks();
    const drawn = probeReading(255);
    expect(canvasHasPicture(view)).toBe(true);
    expect(drawn).toEqual([[view, 0, 0, 1, 1, 0, 0, 1, 1]]);
  });

  it('says no for a canvas of no size, yes where the page cannot read it', () => {
    probeReading(255);
    expect(canvasHasPicture(viewCanvas(0, 0))).toBe(false);
    vi.restoreAllMocks();
    probeReading('throws');
    expect(canvasHasPicture(viewCanvas(640, 480))).toBe(true);
  });
});
