/**
 * kvmd-media's answers (wire-protocol.md 4): `GET /api/media` and the first event of the
 * `/api/media/ws` socket list what the device streams; ours is H.264 only.
 */

/** `profile_level_id` of the H.264 we send: Constrained Baseline, level 3.1 (kvmd's value). */
export interface MediaInfo {
  video: { h264: { profile_level_id: string } };
}

/** `GET /api/media` (kvmd 4.2xx). */
export interface MediaResult {
  media: MediaInfo;
}

/** The `video` query of `/api/media/ws`: empty = the regular (web UI) mode. */
export const MEDIA_PURE_VIDEO_FORMATS = ['h264'] as const;
