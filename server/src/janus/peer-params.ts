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
/**
 * The id the offer asks for. werift numbers the configured extensions itself (from 1, audio's
 * first) and offers those ids: what packets carry is the id of the answer
 * (`answeredExtensionIds`), never this constant.
 */
export const PLAYOUT_DELAY_EXT_ID = 6;

/**
 * The id of each RTP header extension URI in the answer's section with `a=mid:<mid>` (RFC 8285
 * `a=extmap:<id>[/<direction>] <uri>`). An extension the browser left out has no entry.
 */
export function answeredExtensionIds(sdp: string, mid: string): Map<string, number> {
  const ids = new Map<string, number>();
  for (const section of sdp.split(/\r?\n(?=m=)/).slice(1)) {
    const lines = section.split(/\r?\n/);
    if (!lines.includes(`a=mid:${mid}`)) continue;
    for (const line of lines) {
      const m = /^a=extmap:(\d+)(?:\/\w+)?\s+(\S+)/.exec(line);
      // one-byte header ids are 1-14 (RFC 8285 4.2); the packets here are written in that form
      if (m && Number(m[1]) >= 1 && Number(m[1]) <= 14) ids.set(m[2]!, Number(m[1]));
    }
  }
  return ids;
}
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

/**
 * The ICE side of `webrtc` in the config (docs/webrtc.md "Behind a 1:1 NAT"): the UDP ports the
 * server's candidates bind to, and the addresses announced instead of their own.
 */
export interface IceNetworkConfig {
  /** [min, max], both bound, min < max (werift's icePortRange); null: any port. */
  portRange: readonly [number, number] | null;
  /** Announced instead of a host candidate's own address of the same family; empty: off. */
  nat1to1Ips: readonly string[];
}

/**
 * No port of `webrtc.port_range` was free for the peer's candidates (each peer holds one port
 * per local address while it lives): the offer is refused, nothing else is affected.
 */
export class IcePortsExhaustedError extends Error {
  constructor(readonly range: readonly [number, number]) {
    super(`no free UDP port in webrtc.port_range ${range[0]}-${range[1]}`);
    this.name = 'IcePortsExhaustedError';
  }
}

export const NO_ICE_NETWORK: IceNetworkConfig = { portRange: null, nat1to1Ips: [] };

/** At most this many NAT addresses (each host candidate is announced once per address). */
export const MAX_NAT_1TO1_IPS = 8;

/** `"min-max"` to [min, max], or why not (werift wants min < max: at least two ports). */
export function parsePortRange(text: string): readonly [number, number] | string {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(text.trim());
  if (!m) return `"${text}" is not a port range "min-max" (e.g. "20000-20100")`;
  const min = Number(m[1]);
  const max = Number(m[2]);
  if (min < 1024 || max > 65535) return `ports of "${text}" must be within 1024-65535`;
  if (min >= max) return `"${text}": min must be less than max (a range of at least two ports)`;
  return [min, max];
}

/** Why `address` cannot be announced as a 1:1 NAT address, or null. */
export function natAddressIssue(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return `"${address}" is not an IP address`;
  if (family === 4 && address === '0.0.0.0') return `"${address}" is unspecified`;
  if (family === 6 && /^[:0]*$/.test(address)) return `"${address}" is unspecified`;
  return null;
}

/**
 * One candidate line (`a=candidate:` or bare `candidate:`) as announced through the 1:1 NAT:
 * a host candidate becomes one line per NAT address of its family (same port; foundation and
 * priority kept, a suffix on the foundation when there are several); other types, and host
 * candidates of a family no NAT address has, are returned as they are.
 */
export function natCandidateLines(line: string, ips: readonly string[]): string[] {
  const prefix = line.startsWith('a=') ? 'a=' : '';
  const fields = line.slice(prefix.length).split(' ');
  // candidate:<foundation> <component> <transport> <priority> <address> <port> typ <type> ...
  if (fields.length < 8 || fields[6] !== 'typ' || fields[7] !== 'host') return [line];
  const family = isIP(fields[4] ?? '');
  const mapped = [...new Set(ips.filter((ip) => isIP(ip) === family))];
  if (family === 0 || mapped.length === 0) return [line];
  return mapped.map((ip, i) => {
    const out = [...fields];
    out[4] = ip;
    if (i > 0) out[0] = `${fields[0]}${i}`;
    return prefix + out.join(' ');
  });
}

/**
 * The server's SDP as announced through the 1:1 NAT: its host candidates rewritten
 * (natCandidateLines) and each `c=` line that named one of their addresses names the first
 * NAT address of that family (browsers ignore it for ICE, but it must not leak the inner one).
 */
export function natSdp(sdp: string, ips: readonly string[]): string {
  if (ips.length === 0) return sdp;
  const eol = sdp.includes('\r\n') ? '\r\n' : '\n';
  const lines = sdp.split(eol);
  const inner = new Map<string, string>();
  for (const line of lines) {
    if (!line.startsWith('a=candidate:')) continue;
    const f = line.split(' ');
    const address = f[4] ?? '';
    const ip = ips.find((x) => isIP(x) === isIP(address));
    if (f[7] === 'host' && ip) inner.set(address, ip);
  }
  return lines
    .flatMap((line) => {
      if (line.startsWith('a=candidate:')) return natCandidateLines(line, ips);
      const c = /^c=IN IP[46] (\S+)$/.exec(line);
      const ip = c ? inner.get(c[1]!) : undefined;
      if (c && ip) return [`c=IN IP${isIP(ip)} ${ip}`];
      return [line];
    })
    .join(eol);
}

/** The distinct ports of an SDP's host candidates (to tell an exhausted port range). */
export function hostCandidatePorts(sdp: string): number[] {
  const ports = new Set<number>();
  for (const line of sdp.split(/\r?\n/)) {
    const f = line.split(' ');
    if (line.startsWith('a=candidate:') && f[7] === 'host') ports.add(Number(f[5]));
  }
  return [...ports];
}

/** The config's `webrtc` (validated by config.ts) as the peers take it. */
export function iceNetworkOf(webrtc: {
  port_range: string | null;
  nat_1to1_ips: readonly string[];
}): IceNetworkConfig {
  const range = webrtc.port_range === null ? null : parsePortRange(webrtc.port_range);
  if (typeof range === 'string') throw new Error(`webrtc.port_range: ${range}`);
  return { portRange: range, nat1to1Ips: [...webrtc.nat_1to1_ips] };
}
