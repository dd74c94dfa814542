/**
 * H.264 access units as they flow from the encoder to every viewer (WebRTC and direct).
 */
import type { StreamerDrops } from '@kvm/protocol';

export interface AccessUnit {
  /** One whole access unit in Annex B (start codes included), SPS/PPS in front of each IDR. */
  data: Buffer;
  /** An IDR: a decoder can start here. */
  key: boolean;
  /** Monotonic sequence number from the encoder (restarts are not reset). */
  seq: number;
  /** Capture time of the source frame, ms on the performance.now() clock. */
  capturedAt: number;
  /** 90 kHz RTP-style timestamp derived from capturedAt. */
  pts90k: number;
}

/**
 * What a transport (the Janus gateway, the direct H.264 socket) sees of the video pipeline.
 * `subscribe` counts as a viewer: the encoder runs while there is at least one, and a new
 * viewer gets the cached GOP (from the last key frame on) at once, then live units.
 */
export interface VideoFeed {
  subscribe(onUnit: (unit: AccessUnit) => void): () => void;
  /** The viewer lost or never had a key frame (PLI/FIR, decoder error): get one soon. */
  requestKeyFrame(): void;
  /**
   * Hands the cached GOP (its key frame and every unit since) to `onUnit`, a subscribed viewer
   * that lost its decoder's state, at once: a key frame for that viewer alone, where
   * `requestKeyFrame` restarts the encoder every viewer shares. False: no whole GOP is cached
   * (none yet, or it passed the cache's bounds), nothing was handed; ask for a key frame then.
   * Optional: a feed without a cache (a test fake) has none.
   */
  replayGop?(onUnit: (unit: AccessUnit) => void): boolean;
  /** profile-level-id of the stream, e.g. `42e01f` (Constrained Baseline). */
  readonly profileLevelId: string;
  /**
   * A transport skipped `units` access units for one viewer (default 1): counted in the
   * streamer state's `drops`. Optional so that a feed without counters (a test fake) fits.
   */
  reportDrop?(reason: ViewerDropReason, units?: number): void;
}

/** Why a frame never reached a viewer (protocol's `StreamerDrops` has the meanings). */
export type DropReason = keyof StreamerDrops;

/** The reasons a transport reports through `VideoFeed.reportDrop`. */
export type ViewerDropReason = Extract<DropReason, 'viewer_lagging'>;

export type DropCounts = StreamerDrops;

export const DROP_REASONS: readonly DropReason[] = [
  'source_busy',
  'encoder_offline',
  'encoder_restart',
  'gop_cache_overflow',
  'viewer_lagging',
];
