/**
 * The H.265 side of the encoder (encoder.ts runs it when `codec` is 'h265'): libx265 with the
 * same rate control and key frame settings as the H.264 encoder, NUT out (hevc-nut-reader.ts
 * says why). Used for WebRTC viewers whose browser takes H.265 (janus/codecs.ts); the direct
 * H.264 socket never gets it.
 *
 * x265's zerolatency tune: no B-frames, no lookahead, no cutree, one frame thread, so every
 * frame written comes back as one access unit, in order (the FIFO of capture times holds).
 * On a board with a hardware HEVC encoder (docs/drivers.md) this is where it would be named.
 */

/** What the output side needs of the encoder's settings. */
export interface HevcOutputSettings {
  bitrateKbps: number;
  /** Frames between key frames; 0 = only the first. */
  gop: number;
  processing: 'quality_first' | 'low_latency_first';
}

/** ffmpeg's output arguments for H.265 (after the input and filter arguments). */
export function x265OutputArgs(s: HevcOutputSettings): string[] {
  const lowLatency = s.processing === 'low_latency_first';
  const bufsize = Math.max(50, Math.round(lowLatency ? s.bitrateKbps / 2 : s.bitrateKbps));
  // x265: keyint -1 is one key frame at the start
  const keyint = s.gop > 0 ? String(s.gop) : '-1';
  return [
    '-c:v',
    'libx265',
    '-preset',
    lowLatency ? 'ultrafast' : 'veryfast',
    '-tune',
    'zerolatency',
    // Main profile, 8-bit 4:2:0: what the offer's profile-id=1 promises
    '-pix_fmt',
    'yuv420p',
    '-b:v',
    `${s.bitrateKbps}k`,
    '-maxrate',
    `${s.bitrateKbps}k`,
    '-bufsize',
    `${bufsize}k`,
    '-x265-params',
    `log-level=error:keyint=${keyint}:min-keyint=${s.gop > 0 ? s.gop : 1}:scenecut=0:repeat-headers=1:rc-lookahead=0`,
    '-flush_packets',
    '1',
    '-f',
    'nut',
    'pipe:1',
  ];
}
