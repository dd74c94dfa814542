/**
 * The remote computer's sound in its own <audio> element, apart from the <video>: the video
 * autoplays muted (always allowed), and when the browser refuses sound before a user gesture
 * only this element waits, never the picture. A refused play() is tried again at the first
 * click or key press on the page (or the volume button's click).
 *
 * Mute also disables the received track, so whatever reads it (the e2e's analyser) hears the
 * silence the user hears.
 */

/** The parts of HTMLAudioElement used here. */
export interface AudioElementLike {
  srcObject: MediaProvider | null;
  volume: number;
  muted: boolean;
  play(): Promise<void>;
}

export interface GestureTargetLike {
  addEventListener(type: string, listener: () => void, options?: AddEventListenerOptions): void;
  removeEventListener(type: string, listener: () => void, options?: EventListenerOptions): void;
}

/** The events that count as a user gesture for autoplay. */
const GESTURES = ['pointerdown', 'keydown', 'touchend'] as const;

export interface RemoteAudioOptions {
  /** Autoplay refused (true) or sound playing again (false). */
  onBlocked: (blocked: boolean) => void;
  gestureTarget?: GestureTargetLike | null;
  makeStream?: (track: MediaStreamTrack) => MediaProvider;
}

export class RemoteAudioPlayer {
  private element: AudioElementLike | null = null;
  private track: MediaStreamTrack | null = null;
  private volume = 1;
  private muted = false;
  private blocked = false;
  private gestureArmed = false;
  private readonly options: RemoteAudioOptions;

  constructor(options: RemoteAudioOptions) {
    this.options = options;
  }

  isBlocked(): boolean {
    return this.blocked;
  }

  attach(element: AudioElementLike | null): void {
    if (this.element === element) return;
    if (this.element) this.element.srcObject = null;
    this.element = element;
    this.connect();
  }

  setTrack(track: MediaStreamTrack | null): void {
    if (this.track === track) return;
    this.track = track;
    this.connect();
  }

  setVolume(volume: number): void {
    this.volume = Math.min(1, Math.max(0, volume));
    if (this.element) this.element.volume = this.volume;
  }

  setMuted(muted: boolean): void {
    this.muted = muted;
    this.applyMuted();
    if (!muted) this.play();
  }

  /** A user gesture (the volume button): try the refused sound again. */
  unblock(): void {
    this.play();
  }

  dispose(): void {
    this.disarm();
    this.attach(null);
    this.track = null;
  }

  private connect(): void {
    const element = this.element;
    if (!element) return;
    const track = this.track;
    element.srcObject = track
      ? (this.options.makeStream ?? ((t) => new MediaStream([t])))(track)
      : null;
    element.volume = this.volume;
    this.applyMuted();
    if (track) this.play();
    else this.setBlocked(false);
  }

  private applyMuted(): void {
    if (this.element) this.element.muted = this.muted;
    if (this.track) this.track.enabled = !this.muted;
  }

  private play(): void {
    const element = this.element;
    if (!element || !this.track || this.muted) return;
    let started: Promise<void>;
    try {
      started = element.play();
    } catch (err) {
      started = Promise.reject(err);
    }
    started.then(
      () => {
        if (this.element === element) this.setBlocked(false);
      },
      (err: unknown) => {
        if (this.element !== element) return;
        // AbortError: a newer srcObject replaced this one; that one's play() decides.
        if ((err as { name?: unknown } | null)?.name === 'NotAllowedError') {
          this.setBlocked(true);
          this.arm();
        }
      },
    );
  }

  private readonly onGesture = (): void => {
    this.disarm();
    this.play();
  };

  private arm(): void {
    const target = this.gestureTarget();
    if (this.gestureArmed || !target) return;
    this.gestureArmed = true;
    for (const type of GESTURES) target.addEventListener(type, this.onGesture, { capture: true });
  }

  private disarm(): void {
    const target = this.gestureTarget();
    if (!this.gestureArmed || !target) return;
    this.gestureArmed = false;
    for (const type of GESTURES) {
      target.removeEventListener(type, this.onGesture, { capture: true });
    }
  }

  private gestureTarget(): GestureTargetLike | null {
    if (this.options.gestureTarget !== undefined) return this.options.gestureTarget;
    return typeof window === 'undefined' ? null : window;
  }

  private setBlocked(blocked: boolean): void {
    if (this.blocked === blocked) return;
    this.blocked = blocked;
    if (!blocked) this.disarm();
    this.options.onBlocked(blocked);
  }
}
