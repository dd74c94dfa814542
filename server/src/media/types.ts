/**
 * H.264 access units as they flow from the encoder to every viewer (WebRTC and direct).
 */

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
  /** profile-level-id of the stream, e.g. `42e01f` (Constrained Baseline). */
  readonly profileLevelId: string;
}
