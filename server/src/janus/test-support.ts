/**
 * Test doubles for the Janus gateway: a VideoFeed that records what it is asked, and a Janus
 * API client over a real WebSocket, and a werift peer in the browser's role. Used by the gateway
 * tests, the e2e spec and the video bench.
 */
import {
  RTCPeerConnection,
  RTCRtpCodecParameters,
  type MediaStreamTrack,
  type RTCDataChannel,
  type RtpPacket,
} from 'werift';
import WebSocket from 'ws';
import type { AccessUnit, VideoFeed } from '../media/types';

export class FakeFeed implements VideoFeed {
  readonly profileLevelId = '42e01f';
  readonly viewers = new Set<(unit: AccessUnit) => void>();
  subscribes = 0;
  keyFrameRequests = 0;
  /** Units handed to every new viewer at once (the GOP cache of the real hub). */
  cache: AccessUnit[] = [];

  subscribe(onUnit: (unit: AccessUnit) => void): () => void {
    this.subscribes += 1;
    this.viewers.add(onUnit);
    for (const unit of this.cache) onUnit(unit);
    return () => this.viewers.delete(onUnit);
  }

  requestKeyFrame(): void {
    this.keyFrameRequests += 1;
  }

  replays = 0;

  /** As the hub: the cache again to a subscribed viewer, when it starts with a key unit. */
  replayGop(onUnit: (unit: AccessUnit) => void): boolean {
    if (!this.viewers.has(onUnit) || !this.cache[0]?.key) return false;
    this.replays += 1;
    for (const unit of this.cache) onUnit(unit);
    return true;
  }

  /** Units the transports said they dropped, by reason (the hub's drop counters). */
  readonly drops = new Map<string, number>();

  reportDrop(reason: string, units = 1): void {
    this.drops.set(reason, (this.drops.get(reason) ?? 0) + units);
  }

  push(unit: AccessUnit): void {
    if (unit.key) this.cache = [];
    this.cache.push(unit);
    for (const viewer of this.viewers) viewer(unit);
  }
}

export type JanusMessage = Record<string, unknown> & { janus: string };

/** A minimal Janus API client: requests by transaction, everything else queued as events. */
export class JanusTestClient {
  private readonly waiters = new Map<string, (m: JanusMessage) => void>();
  private readonly events: JanusMessage[] = [];
  private eventWaiter: (() => void) | null = null;
  private seq = 0;
  readonly all: JanusMessage[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const msg = JSON.parse(String(data)) as JanusMessage;
      this.all.push(msg);
      const t = msg['transaction'];
      const waiter = typeof t === 'string' ? this.waiters.get(t) : undefined;
      if (waiter && typeof t === 'string') {
        this.waiters.delete(t);
        waiter(msg);
      } else {
        this.events.push(msg);
        this.eventWaiter?.();
      }
    });
  }

  static connect(url: string, protocol = 'janus-protocol'): Promise<JanusTestClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, protocol);
      ws.once('open', () => resolve(new JanusTestClient(ws)));
      ws.once('error', reject);
    });
  }

  /** create + attach, the first steps of janus.js: the new session's and handle's ids. */
  async attach(plugin: string, opaqueId: string): Promise<{ session: number; handle: number }> {
    const created = await this.request({ janus: 'create' });
    const session = (created['data'] as { id: number }).id;
    const attached = await this.request({
      janus: 'attach',
      session_id: session,
      plugin,
      opaque_id: opaqueId,
    });
    return { session, handle: (attached['data'] as { id: number }).id };
  }

  request(msg: Record<string, unknown>, timeoutMs = 5_000): Promise<JanusMessage> {
    const transaction = `t${++this.seq}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no reply to ${String(msg['janus'])}`)),
        timeoutMs,
      );
      this.waiters.set(transaction, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
      this.ws.send(JSON.stringify({ ...msg, transaction }));
    });
  }

  sendRaw(text: string): void {
    this.ws.send(text);
  }

  /** The next queued message (without a waiting transaction) matching `pred`. */
  async next(
    pred: (m: JanusMessage) => boolean = () => true,
    timeoutMs = 5_000,
  ): Promise<JanusMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.events.findIndex(pred);
      if (i >= 0) return this.events.splice(i, 1)[0]!;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `no matching message; queued: ${JSON.stringify(this.events).slice(0, 500)}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.eventWaiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.eventWaiter = null;
    }
  }

  /** Plugin event whose `result.status` (or error) matches. */
  pluginEvent(status: string | 'error', timeoutMs?: number): Promise<JanusMessage> {
    return this.next((m) => {
      const data = pluginData(m);
      if (!data) return false;
      if (status === 'error') return 'error_code' in data;
      return (data['result'] as Record<string, unknown> | undefined)?.['status'] === status;
    }, timeoutMs);
  }

  /** The SDP offer of the plugin's `started` event (the answer to a `watch`). */
  async startedOffer(timeoutMs?: number): Promise<string> {
    return ((await this.pluginEvent('started', timeoutMs))['jsep'] as { sdp: string }).sdp;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.ws.readyState === WebSocket.CLOSED) return resolve();
      this.ws.once('close', () => resolve());
      this.ws.close();
    });
  }
}

export function pluginData(m: JanusMessage): Record<string, unknown> | undefined {
  if (m.janus !== 'event') return undefined;
  return (m['plugindata'] as { data?: Record<string, unknown> } | undefined)?.data;
}

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/** A key access unit: AUD, SPS (640x360), PPS and an IDR slice of `idrBytes` bytes. */
export function fakeKeyUnit(seq: number, idrBytes = 3000): AccessUnit {
  const idr = Buffer.alloc(idrBytes, 0x5a);
  idr[0] = 0x65;
  const data = Buffer.concat([
    hex('00000001 0910'),
    hex('00000001 6742c01e d900a02f f9701100 00030001 00000300 3c8f162e 48'),
    hex('00000001 68cb83cb20'),
    hex('00000001'),
    idr,
  ]);
  return { data, key: true, seq, capturedAt: seq * 33, pts90k: seq * 3000 };
}

export function fakeDeltaUnit(seq: number): AccessUnit {
  const data = Buffer.concat([hex('00000001 0930 00000001 419a'), Buffer.alloc(200, 0x11)]);
  return { data, key: false, seq, capturedAt: seq * 33, pts90k: seq * 3000 };
}

/**
 * A werift peer playing the browser: answers the offer, connects, receives RTP (collected in
 * `rtp`), gets the server's data channel. Used by the gateway tests and the video bench.
 */
export async function weriftBrowserPeer(
  offerSdp: string,
  opts: { keepRtp?: boolean } = {},
): Promise<{
  pc: RTCPeerConnection;
  answer: string;
  rtp: RtpPacket[];
  /** Resolves on the first RTP packet. */
  media: Promise<void>;
  channel: Promise<RTCDataChannel>;
}> {
  const pc = new RTCPeerConnection({
    iceServers: [],
    bundlePolicy: 'max-bundle',
    codecs: {
      video: [
        new RTCRtpCodecParameters({
          mimeType: 'video/H264',
          clockRate: 90_000,
          rtcpFeedback: [{ type: 'nack' }, { type: 'nack', parameter: 'pli' }],
          parameters: 'profile-level-id=42e01f;packetization-mode=1;level-asymmetry-allowed=1',
        }),
      ],
    },
  });
  const rtp: RtpPacket[] = [];
  let gotMedia: () => void = () => undefined;
  const media = new Promise<void>((resolve) => (gotMedia = resolve));
  pc.onTrack.subscribe((track: MediaStreamTrack) => {
    track.onReceiveRtp.subscribe((p) => {
      gotMedia();
      // a long-running viewer (the bench) keeps nothing
      if (opts.keepRtp !== false) rtp.push(p);
    });
  });
  const channel = new Promise<RTCDataChannel>((resolve) => {
    pc.onDataChannel.subscribe((ch) => resolve(ch));
  });
  await pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
  const answer = await pc.createAnswer();
  for (const t of pc.iceTransports) t.connection.stunServer = undefined;
  await pc.setLocalDescription(answer);
  return { pc, answer: pc.localDescription!.sdp, rtp, media, channel };
}

/** Polls `cond` every 10 ms until it holds, or throws after `timeoutMs`. */
export async function waitFor(cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** UDP sockets this process holds now (a peer's ICE sockets). */
export function udpHandles(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'UDPWrap').length;
}
