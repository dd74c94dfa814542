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
 * Only for a first WebRTC track that comes before the view is mounted; direct H.264 draws in
 * the view's canvas (its decoder runs in a worker already).
 */
import { STATUS_BAR_MIN_HEIGHT, TOOLBAR_HEIGHT } from '@kvm/protocol/constants';

/** The preview never stays longer than this, whatever happens to the page. */
export const PREVIEW_MAX_MS = 3_000;

export const PREVIEW_TEST_ID = 'video-preview';

export interface PreviewHost {
  document: () => Document;
  /** Wraps a track for a <video> (MediaStream; a fake in unit tests). */
  stream: (track: MediaStreamTrack) => MediaProvider;
}

export class FirstFramePreview {
  private element: HTMLVideoElement | null = null;
  private track: MediaStreamTrack | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private isSpent = false;
  private onEnded = (): void => this.end();
  private readonly firstFrameWaiters: (() => void)[] = [];

  constructor(private readonly host: PreviewHost) {}

  /**
   * A preview has shown or the view has mounted: setTrack() shows nothing any more (one per
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
   * The client's track: the first one shows while the view is not mounted yet; a different
   * track (or none) ends the one shown, as it would leave the view.
   */
  setTrack(track: MediaStreamTrack | null): void {
    if (track === this.track) return;
    this.end();
    if (!track || this.isSpent || track.readyState === 'ended') return;
    this.isSpent = true;
    const document = this.host.document();
    const video = document.createElement('video');
    video.dataset['testid'] = PREVIEW_TEST_ID;
    video.muted = true;
    video.autoplay = true;
    video.playsInline = true;
    video.disablePictureInPicture = true;
    video.setAttribute('aria-hidden', 'true');
    Object.assign(video.style, {
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
    video.srcObject = this.host.stream(track);
    document.body.appendChild(video);
    video.play().catch(() => undefined); // muted autoplay is allowed; a refusal is harmless
    track.addEventListener('ended', this.onEnded);
    this.element = video;
    this.track = track;
    this.timer = setTimeout(() => this.end(), PREVIEW_MAX_MS);
    performance.mark('kvm:video:preview');
    const presented = (): void => {
      if (this.element !== video) return;
      performance.mark('kvm:video:preview_presented');
      this.settleFirstFrame();
    };
    if (typeof video.requestVideoFrameCallback === 'function') {
      video.requestVideoFrameCallback(presented);
    } else {
      video.addEventListener('loadeddata', presented, { once: true });
    }
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
    this.end();
  }

  /** The view's own video presented a frame: the preview's place is covered. */
  viewPresented(): void {
    this.end();
  }

  end(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.track?.removeEventListener('ended', this.onEnded);
    this.track = null;
    const video = this.element;
    if (!video) return;
    this.element = null;
    this.settleFirstFrame();
    video.srcObject = null;
    video.remove();
    performance.mark('kvm:video:preview_end');
  }
}
