/**
 * The video codecs this browser's WebRTC can receive, of those the device may send, for the
 * Janus `watch` request (`params.codecs`, server/src/janus/codecs.ts): the device offers H.265
 * first when the list has it, H.264 always. Chromium lists H265 only where it can decode it
 * (a platform decoder); Debian's Chromium, headless, does not.
 */
export type WatchVideoCodec = 'h265' | 'h264';

/** e.g. `['h265', 'h264']`; null when the browser cannot say (no RTCRtpReceiver). */
export function receiveVideoCodecs(
  caps: RTCRtpCapabilities | null | undefined = typeof RTCRtpReceiver === 'undefined'
    ? undefined
    : RTCRtpReceiver.getCapabilities?.('video'),
): WatchVideoCodec[] | null {
  if (!caps) return null;
  const mimes = new Set(caps.codecs.map((c) => c.mimeType.toLowerCase()));
  const out: WatchVideoCodec[] = [];
  if (mimes.has('video/h265')) out.push('h265');
  if (mimes.has('video/h264')) out.push('h264');
  return out;
}
