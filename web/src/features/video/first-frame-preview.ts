/**
 * The remote screen before the console has rendered (issue 28 item 2, docs/webrtc.md "First
 * frame"). On a page load the WebRTC client starts before React renders the main page
 * (app/prestart.ts), and on a slow machine its track arrives while the page's main thread is
 * still evaluating and rendering the console: the view's <video> then came 200-300 ms after the
 * picture could have shown. The preview plays the track at once in a plain <video> over the
 * place the view will take (below the toolbar's place, above the status bar's: MainLayout keeps
 * both free until the chrome renders), and goes when the view's own video presents its first
 * frame, when the view unmounts, when the track changes or ends, or after PREVIEW_MAX_MS at most.
 * It takes no input (pointer-events none): keyboard and mouse start with the view.
 *
 * Direct H.264 the same way: a plain <canvas> in that place is the stream's first canvas (its
 * worker decodes and draws there while the page's main thread is busy); when the view attaches
 * its own canvas the worker copies the picture onto it (FramePresenter.attach), and the
 * stream's `painted` event for the view's canvas ends the preview.
 *
 * Only for the first client that comes before the view is mounted.
 */
import { STATUS_BAR_MIN_HEIGHT, TOOLBAR_HEIGHT } from '@kvm/protocol/constants';

/** The preview never stays longer than this, whatever happens to the page. */
export const PREVIEW_MAX_MS = 3_000;

export const PREVIEW_TEST_ID = 'video-preview';

/**
 * Animation frames the direct view waits, after the worker said its canvas is painted, for the
 * page's copy of that canvas to hold the picture before the preview goes (about 0.5 s).
 */
export const PICTURE_WAIT_FRAMES = 30;

/**
 * Whether the page's copy of a canvas holds a picture: its first pixel is opaque. A canvas
 * handed to a worker (transferControlToOffscreen) reaches the screen through the compositor,
 * but the copy the page reads comes in a task of its own, later on a loaded machine (a full run
 * read the view's canvas blank as the preview went). A decoded frame is opaque everywhere; a
 * canvas no drawing reached yet is transparent. Where the page cannot read it, true.
 */
export function canvasHasPicture(canvas: HTMLCanvasElement): boolean {
  if (!canvas.width || !canvas.height) return false;
  try {
    const probe = document.createElement('canvas');
    probe.width = 1;
    probe.height = 1;
    const context = probe.getContext('2d', { willReadFrequently: true });
    if (!context) return true;
    context.drawImage(canvas, 0, 0, 1, 1, 0, 0, 1, 1);
    return context.getImageData(0, 0, 1, 1).data[3]! > 0;
  } catch {
    return true;
  }
}

/**
 * Why a preview went, the `detail` of its `kvm:video:preview_end` mark: the view showed the
 * picture, the view unmounted, the client's track or stream changed or ended, or the bound.
 */
export type PreviewEnd = 'view' | 'unmount' | 'source' | 'ended' | 'bound';

export interface PreviewHost {
  document: () => Document;
  /** Wraps a track for a <video> (MediaStream; a fake in unit tests). */
  stream: (track: MediaStreamTrack) => MediaProvider;
}

/** Direct H.264's stream as the preview uses it (lib/h264-direct.ts H264DirectStream). */
export interface CanvasSource {
  attachCanvas(canvas: HTMLCanvasElement | null): void;
  readonly attachedCanvas: unknown;
  /** Lets go of what the stream keeps of canvases that left the page. */
  releaseGoneCanvases(): void;
  on(type: 'painted', handler: (event: { canvas: unknown }) => void): () => void;
}

/** What a preview shows: a WebRTC track, or a direct H.264 stream. */
export type PreviewSource = MediaStreamTrack | CanvasSource;

function isCanvasSource(source: PreviewSource): source is CanvasSource {
  return typeof (source as Partial<CanvasSource>).attachCanvas === 'function';
}

export class FirstFramePreview {
  private element: HTMLVideoElement | HTMLCanvasElement | null = null;
  private source: PreviewSource | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private isSpent = false;
  private onEnded = (): void => this.end('ended');
  private offPainted = (): void => undefined;
  private readonly firstFrameWaiters: (() => void)[] = [];

  constructor(private readonly host: PreviewHost) {}

  /**
   * A preview has shown or the view has mounted: setSource() shows nothing any more (one per
   * page load).
   */
  get spent(): boolean {
    return this.isSpent;
  }

  /** Whether a preview shows now. */
  get showing(): boolean {
    return this.element !== null;
  }

  /**
   * The client's track or direct stream: the first one shows while the view is not mounted
   * yet; a different one (or none) ends the one shown, as it would leave the view.
   */
  setSource(source: PreviewSource | null): void {
    if (source === this.source) return;
    this.end('source');
    if (!source || this.isSpent) return;
    if (isCanvasSource(source) ? source.attachedCanvas !== null : source.readyState === 'ended')
      return;
    this.isSpent = true;
    const document = this.host.document();
    const element = document.createElement(isCanvasSource(source) ? 'canvas' : 'video');
    element.dataset['testid'] = PREVIEW_TEST_ID;
    element.setAttribute('aria-hidden', 'true');
    Object.assign(element.style, {
      position: 'fixed',
      left: '0',
      right: '0',
      top: `${TOOLBAR_HEIGHT}px`,
      bottom: `${STATUS_BAR_MIN_HEIGHT}px`,
      width: '100%',
      height: `calc(100% - ${TOOLBAR_HEIGHT + STATUS_BAR_MIN_HEIGHT}px)`,
      objectFit: 'contain',
      background: '#000',
      pointerEvents: 'none',
      zIndex: '1',
    });
    document.body.appendChild(element);
    this.element = element;
    this.source = source;
    this.timer = setTimeout(() => this.end('bound'), PREVIEW_MAX_MS);
    performance.mark('kvm:video:preview');
    const presented = (): void => {
      if (this.element !== element) return;
      performance.mark('kvm:video:preview_presented');
      this.settleFirstFrame();
    };
    if (element instanceof HTMLVideoElement) {
      const track = source as MediaStreamTrack;
      element.muted = true;
      element.autoplay = true;
      element.playsInline = true;
      element.disablePictureInPicture = true;
      element.srcObject = this.host.stream(track);
      element.play().catch(() => undefined); // muted autoplay is allowed; a refusal is harmless
      track.addEventListener('ended', this.onEnded);
      if (typeof element.requestVideoFrameCallback === 'function') {
        element.requestVideoFrameCallback(presented);
      } else {
        element.addEventListener('loadeddata', presented, { once: true });
      }
      return;
    }
    const stream = source as CanvasSource;
    this.offPainted = stream.on('painted', ({ canvas }) => {
      if (canvas === element) presented();
    });
    stream.attachCanvas(element);
  }

  /**
   * Settles when the preview has presented its first frame or has gone; at once when none
   * shows (prestart loads the console's chunks after it: the main thread stays free for it).
   */
  firstFrame(): Promise<void> {
    if (!this.element) return Promise.resolve();
    return new Promise((resolve) => this.firstFrameWaiters.push(resolve));
  }

  private settleFirstFrame(): void {
    for (const resolve of this.firstFrameWaiters.splice(0)) resolve();
  }

  /** The view mounted: no preview starts any more; one showing stays until viewPresented(). */
  viewMount(): void {
    this.isSpent = true;
  }

  /** The view unmounted: it shows nothing, so neither does the preview. */
  viewUnmount(): void {
    this.end('unmount');
  }

  /** The view's own video or canvas shows a picture: the preview's place is covered. */
  viewPresented(): void {
    this.end('view');
  }

  end(reason: PreviewEnd): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const source = this.source;
    this.source = null;
    this.offPainted();
    this.offPainted = () => undefined;
    const element = this.element;
    this.element = null;
    if (source && !isCanvasSource(source)) source.removeEventListener('ended', this.onEnded);
    if (!element) return;
    this.settleFirstFrame();
    if (element instanceof HTMLVideoElement) element.srcObject = null;
    if (source && isCanvasSource(source) && source.attachedCanvas === element) {
      // Nothing took over yet (the bound passed, say): detached while still on the page, the
      // worker keeps its picture for the view's canvas to copy when it comes.
      source.attachCanvas(null);
      element.remove();
    } else {
      element.remove();
      // the view's canvas has the picture: the preview's is let go of
      if (source && isCanvasSource(source)) source.releaseGoneCanvases();
    }
    performance.mark('kvm:video:preview_end', { detail: reason });
  }
}
