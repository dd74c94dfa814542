/**
 * Which video codec a WebRTC viewer gets (docs/webrtc.md "H.265"). The server is the offerer
 * (ustreamer's JSEP), so the browser's capabilities come with `watch`: our console sends
 * `params.codecs`, the codecs its `RTCRtpReceiver.getCapabilities('video')` lists (e.g.
 * `['h265', 'h264']`). kvmd's and GL's clients send nothing and get H.264 as before.
 *
 * When the browser lists H.265 and the device can encode it, the offer's video section lists
 * H265 first, then H264 (RFC 3264 preference order); the browser's answer picks, and the
 * viewer is sent what the answer lists first of the two. Otherwise the offer is H.264 only.
 * The camera's VP8 section (mid `c`) is not concerned.
 */

export type VideoCodec = 'h264' | 'h265';

export const H265_PAYLOAD_TYPE = 100;

/**
 * The highest level this device sends in an offer: 5.1 (general_level_idc 153), 4K at 30 fps;
 * RFC 7798 7.1 says level-id is the highest level the sender uses.
 */
export const H265_OFFER_LEVEL_ID = 153;

/**
 * fmtp of the offered H265: Main profile (profile-id 1, the 8-bit 4:2:0 the encoder makes),
 * Main tier, one RTP stream (tx-mode SRST, RFC 7798 7.1); Chromium's own H265 line has the
 * same parameters.
 */
export function h265Fmtp(levelId = H265_OFFER_LEVEL_ID): string {
  return `level-id=${levelId};profile-id=1;tier-flag=0;tx-mode=SRST`;
}

/** At most this many entries of `codecs` are read (a client sends a handful). */
const MAX_LISTED = 32;

/**
 * The codecs of `watch`'s `params.codecs` this server knows, in the order given: `h265`,
 * `hevc`, `video/H265` and `h264`, `avc`, `video/H264` (any case). Anything else, or no list,
 * is ignored: an old client gets H.264.
 */
export function browserVideoCodecs(value: unknown): VideoCodec[] {
  if (!Array.isArray(value)) return [];
  const out: VideoCodec[] = [];
  for (const entry of value.slice(0, MAX_LISTED)) {
    if (typeof entry !== 'string' || entry.length > 64) continue;
    const name = entry.toLowerCase().replace(/^video\//, '');
    const codec =
      name === 'h265' || name === 'hevc'
        ? 'h265'
        : name === 'h264' || name === 'avc'
          ? 'h264'
          : null;
    if (codec && !out.includes(codec)) out.push(codec);
  }
  return out;
}

/**
 * The codecs the offer lists, preferred first: H.265 then H.264 when the browser takes H.265
 * and the device can encode it, else H.264 alone (always the fallback).
 */
export function offeredVideoCodecs(browser: readonly VideoCodec[], canH265: boolean): VideoCodec[] {
  return canH265 && browser.includes('h265') ? ['h265', 'h264'] : ['h264'];
}

/**
 * The codec the browser's answer chose for the first video section (ours, mid `v`): the first
 * of its payload types that maps to H264 or H265; H.264 when the section says neither (a
 * rejected or odd section: the H.264 path is what every answer so far took).
 */
export function answeredVideoCodec(sdp: string): VideoCodec {
  const lines = sdp.split(/\r?\n/);
  const start = lines.findIndex((l) => l.startsWith('m=video '));
  if (start < 0) return 'h264';
  let end = lines.findIndex((l, i) => i > start && l.startsWith('m='));
  if (end < 0) end = lines.length;
  const section = lines.slice(start, end);
  const names = new Map<string, string>();
  for (const line of section) {
    const m = /^a=rtpmap:(\d+) ([^/\s]+)\//.exec(line);
    if (m) names.set(m[1]!, m[2]!.toUpperCase());
  }
  // m=video <port> <proto> <fmt> <fmt> ...
  for (const pt of section[0]!.split(' ').slice(3)) {
    const name = names.get(pt);
    if (name === 'H265') return 'h265';
    if (name === 'H264') return 'h264';
  }
  return 'h264';
}
