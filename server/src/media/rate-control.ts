/**
 * What the H.264 and H.265 encoders share of their command lines (encoder.ts, hevc-encoder.ts):
 * SPEC 3's video processing as a preset and a VBV buffer, and the GOP in x264/x265 params.
 * quality_first = veryfast (better picture per bit), low_latency_first = ultrafast with a
 * half-second VBV buffer (smaller key-frame bursts, less queueing on the network).
 */
export interface RateControlSettings {
  bitrateKbps: number;
  /** Frames between key frames; 0 = only the first. */
  gop: number;
  processing: 'quality_first' | 'low_latency_first';
}

/** `-preset … -tune zerolatency` for x264 and x265 alike. */
export function presetArgs(s: RateControlSettings): string[] {
  const lowLatency = s.processing === 'low_latency_first';
  return ['-preset', lowLatency ? 'ultrafast' : 'veryfast', '-tune', 'zerolatency'];
}

/** Constant bitrate capped by a VBV buffer: `-b:v … -maxrate … -bufsize …`. */
export function bitrateArgs(s: RateControlSettings): string[] {
  const lowLatency = s.processing === 'low_latency_first';
  const bufsize = Math.max(50, Math.round(lowLatency ? s.bitrateKbps / 2 : s.bitrateKbps));
  return ['-b:v', `${s.bitrateKbps}k`, '-maxrate', `${s.bitrateKbps}k`, '-bufsize', `${bufsize}k`];
}

/**
 * The key frame part of `-x264-params`/`-x265-params`: every `gop` frames, none forced by a
 * scene cut, headers with each key frame, no lookahead. `onlyFirst` is the encoder's word for
 * "one key frame at the start" (x264 `infinite`, x265 `-1`).
 */
export function keyframeParams(s: RateControlSettings, onlyFirst: string): string {
  const keyint = s.gop > 0 ? String(s.gop) : onlyFirst;
  return `keyint=${keyint}:min-keyint=${s.gop > 0 ? s.gop : 1}:scenecut=0:repeat-headers=1:rc-lookahead=0`;
}
