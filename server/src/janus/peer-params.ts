/**
 * What the WebRTC side of the gateway shares without werift: configuration types, the offer's
 * constants, the candidate filter and RTP helpers. The gateway, the plugin and the video
 * forwarder import these at start; werift itself (peer.ts) loads only with the first viewer
 * (webrtc.ts), so an idle server never holds it.
 */
import { isIP } from 'node:net';
import { AUDIO_FORMAT } from '@kvm/protocol';

/** An ICE server as configured (TURN state, STUN default); `urls` may list several. */
export interface IceServerConfig {
  urls: string | string[];
  username?: string;
  credential?: string;
}

/** A trickled candidate as janus.js sends it (RTCIceCandidateInit). */
export interface CandidateInit {
  candidate?: string;
  sdpMid?: string | null;
  sdpMLineIndex?: number | null;
  usernameFragment?: string | null;
}

export const VIDEO_MID = 'v';
/** The Opus section (AUDIO_FORMAT in protocol/src/audio.ts: mid `a`, payload type 111). */
export const AUDIO_MID = AUDIO_FORMAT.mid;
export const OPUS_PAYLOAD_TYPE = AUDIO_FORMAT.payloadType;
export const DATA_MID = 'd';
/** The browser's camera (issue 24): a recvonly VP8 section, sent to the gadget's webcam. */
export const CAMERA_MID = 'c';
export const VP8_PAYLOAD_TYPE = 98;
/** Label of the data channel the server opens; channels the browser opens work the same. */
export const INPUT_CHANNEL_LABEL = 'hid';
export const H264_PAYLOAD_TYPE = 96;
export const PLAYOUT_DELAY_URI = 'http://www.webrtc.org/experiments/rtp-hdrext/playout-delay';
export const PLAYOUT_DELAY_EXT_ID = 6;
/**
 * Remote candidates one peer takes: each becomes ICE checks werift sends to that address, so a
 * client must not be able to aim the device at an unbounded list of hosts. A browser trickles
 * a handful per network interface.
 */
export const MAX_REMOTE_CANDIDATES = 32;

/**
 * Adds a one-byte-header extension (RFC 8285) carrying playout-delay min=0 max=0 to an RTP
 * packet that has no extension and no CSRCs (what H264Packetizer writes): X bit set, then
 * 0xBEDE, length 1 word, [id<<4 | len-1 = 2][00 00 00], then the payload.
 */
export function withPlayoutDelay(packet: Buffer, id: number): Buffer {
  if ((packet[0]! & 0x1f) !== 0) return packet; // already has an extension or CSRCs
  const out = Buffer.allocUnsafe(packet.length + 8);
  packet.copy(out, 0, 0, 12);
  out[0] = packet[0]! | 0x10;
  out.writeUInt32BE(0xbede0001, 12);
  out[16] = ((id & 0x0f) << 4) | 2;
  out[17] = 0;
  out[18] = 0;
  out[19] = 0;
  packet.copy(out, 20, 12);
  return out;
}

/** werift takes one URL per entry and only uses the first STUN and the first TURN one. */
export function toWeriftIceServers(
  servers: readonly IceServerConfig[],
): { urls: string; username?: string; credential?: string }[] {
  const out: { urls: string; username?: string; credential?: string }[] = [];
  for (const s of servers) {
    for (const urls of Array.isArray(s.urls) ? s.urls : [s.urls]) {
      out.push({
        urls,
        ...(s.username !== undefined ? { username: s.username } : {}),
        ...(s.credential !== undefined ? { credential: s.credential } : {}),
      });
    }
  }
  return out;
}

/** Why werift cannot use a candidate line, or null when it can. */
export function unusableCandidate(candidate: string): string | null {
  // candidate:<foundation> <component> <transport> <priority> <address> <port> typ <type> ...
  const fields = candidate.replace(/^a=/, '').split(/\s+/);
  const transport = fields[2]?.toLowerCase();
  const address = fields[4] ?? '';
  if (transport !== 'udp') return 'not UDP';
  if (address.toLowerCase().endsWith('.local')) return 'mDNS';
  // werift looks up any address containing ".local" over mDNS for 10 s, and a host name
  // would be a lookup the client chooses: only address literals are taken.
  if (isIP(address) === 0) return 'not an IP address';
  return null;
}

/**
 * profile-level-id to offer for the stream: WebRTC in Chromium negotiates only Constrained
 * Baseline (42e01f) and Main (4d001f); level-asymmetry-allowed makes the level moot.
 */
export function offeredProfileLevelId(streamProfileLevelId: string): string {
  return streamProfileLevelId.toLowerCase().startsWith('4d') ? '4d001f' : '42e01f';
}
