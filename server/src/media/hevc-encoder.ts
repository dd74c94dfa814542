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

import { bitrateArgs, keyframeParams, presetArgs, type RateControlSettings } from './rate-control';

/** ffmpeg's output arguments for H.265 (after the input and filter arguments). */
export function x265OutputArgs(s: RateControlSettings): string[] {
  return [
    '-c:v',
    'libx265',
    ...presetArgs(s),
    // Main profile, 8-bit 4:2:0: what the offer's profile-id=1 promises
    '-pix_fmt',
    'yuv420p',
    ...bitrateArgs(s),
    '-x265-params',
    // x265: keyint -1 is one key frame at the start
    `log-level=error:${keyframeParams(s, '-1')}`,
    '-flush_packets',
    '1',
    '-f',
    'nut',
    'pipe:1',
  ];
}
