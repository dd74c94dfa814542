/**
 * The video of one WebRTC viewer: feed subscription → key frame policy → RTP packets.
 *
 * Key frame policy (docs/webrtc.md):
 * - the subscription starts with the answer, before ICE/DTLS are up, so the encoder starts
 *   while the connection is made; until then units are held from the latest key frame on
 *   (the feed hands a new viewer its cached GOP), bounded by `maxPendingBytes`;
 * - when the transport is up the held GOP goes out at once, then live units;
 * - until the viewer has got a key frame, delta units are dropped and a key frame is asked
 *   for (throttled);
 * - PLI/FIR from the browser ask the feed for a key frame (throttled), deltas keep flowing.
 *
 * Sending yields: at most `packetsPerTurn` packets go out per event-loop turn, the rest (in
 * order) on the next turns (setImmediate, after the loop has read its sockets). Each packet
 * costs werift's SRTP and a UDP send (~30-60 us here), so a key frame sent in one loop held
 * the data channel's input messages and the event socket behind it for milliseconds (input
 * bench, issue 10). A turn also ends after `turnMs` of sending (issue 28): on a slower or busier
 * machine 16 packets take several times as long, and an input message waits behind all of them
 * (werift's part is timed; the UDP sends it defers run right after the turn). A backlog over
 * `maxQueuedPackets` (a loop too busy to keep up) goes out at once, as before: memory and video
 * delay stay bounded.
 */
import type { AccessUnit, VideoFeed } from '../media/types';
import { H264Packetizer } from '../media/h264-packetizer';
import { H265Packetizer } from '../media/h265-packetizer';
import { H265_PAYLOAD_TYPE, type VideoCodec } from './codecs';
import { H264_PAYLOAD_TYPE } from './peer-params';

export interface VideoForwarderOptions {
  /** Holding more than this before the transport is up drops the GOP and asks for a new one. */
  maxPendingBytes?: number;
  /** At most one key frame request per this many ms from this viewer. */
  keyFrameRequestIntervalMs?: number;
  /** Payload budget per RTP packet. */
  maxPayload?: number;
  /** Packets sent per event-loop turn before yielding (see the file comment). */
  packetsPerTurn?: number;
  /** ms of sending (by `now`) after which a turn yields, whatever its packet budget left. */
  turnMs?: number;
  /** Queued packets above which the whole queue is sent at once. */
  maxQueuedPackets?: number;
  now?: () => number;
  /** What the feed's units are and how they are payloaded (RFC 6184 / RFC 7798); H.264. */
  codec?: VideoCodec;
}

export interface VideoForwarderStats {
  unitsSent: number;
  keyUnitsSent: number;
  unitsDropped: number;
  packetsSent: number;
  /** Times sending stopped with packets left for a later loop turn. */
  yields: number;
  /** ms from start() to the first key frame sent, null before. */
  firstKeyFrameMs: number | null;
}

export class VideoForwarder {
  private packetizer: H264Packetizer | H265Packetizer;
  private unsubscribe: (() => void) | null = null;
  private active = false;
  private ready = false;
  private hadKey = false;
  private pending: AccessUnit[] = [];
  private pendingBytes = 0;
  private lastKeyRequest = -Infinity;
  private startedAt = 0;
  private readonly maxPendingBytes: number;
  private readonly keyInterval: number;
  private readonly now: () => number;
  readonly stats: VideoForwarderStats = {
    unitsSent: 0,
    keyUnitsSent: 0,
    unitsDropped: 0,
    packetsSent: 0,
    yields: 0,
    firstKeyFrameMs: null,
  };
  /** Packets waiting for a later turn, oldest first, from `queueHead` on. */
  private queue: Buffer[] = [];
  private queueHead = 0;
  /** The capture time of each queued first packet of a frame. */
  private readonly captureOf = new Map<Buffer, number>();
  /** Packets this turn may still send; reset by `nextTurn`. */
  private budget: number;
  private turn: NodeJS.Immediate | null = null;
  private readonly packetsPerTurn: number;
  private readonly turnMs: number;
  /** ms this turn has spent sending; reset by `nextTurn`. */
  private turnSpentMs = 0;
  private readonly maxQueuedPackets: number;

  constructor(
    private feed: VideoFeed,
    /** `capturedAt` (performance.now() ms) comes with the first packet of each frame. */
    private readonly send: (packet: Buffer, capturedAt?: number) => void,
    ssrc: number,
    opts: VideoForwarderOptions = {},
  ) {
    this.packetizer = packetizerFor(opts.codec ?? 'h264', ssrc, opts.maxPayload);
    this.maxPendingBytes = opts.maxPendingBytes ?? 8 * 1024 * 1024;
    this.keyInterval = opts.keyFrameRequestIntervalMs ?? 500;
    this.now = opts.now ?? (() => performance.now());
    // 16 x 1200 bytes: about 1 ms of werift's send path on the 2-core test machine
    this.packetsPerTurn = Math.max(1, opts.packetsPerTurn ?? 16);
    // half of the 2 ms input budget (issue 28); one packet always goes per turn
    this.turnMs = opts.turnMs ?? 0.5;
    this.maxQueuedPackets = opts.maxQueuedPackets ?? 512;
    this.budget = this.packetsPerTurn;
  }

  /**
   * The browser's answer chose another codec than the constructor's (codecs.ts): its feed and
   * payloading from now on. Only before `start()`, when nothing was packetized yet.
   */
  setCodec(codec: VideoCodec, feed: VideoFeed): void {
    if (this.active) throw new Error('the codec is chosen before the forwarder starts');
    this.feed = feed;
    this.packetizer = packetizerFor(codec, this.packetizer.ssrc, this.packetizer.maxPayload);
  }

  get running(): boolean {
    return this.active;
  }

  /** Subscribes to the feed (counts as a viewer). */
  start(): void {
    if (this.active) return;
    this.active = true;
    this.startedAt = this.now();
    // The feed hands over its cached GOP inside subscribe(): `active` is already set.
    this.unsubscribe = this.feed.subscribe((unit) => this.onUnit(unit));
  }

  /** The transport is up: flush the held GOP and go live. */
  setReady(): void {
    if (this.ready) return;
    this.ready = true;
    const held = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    for (const unit of held) this.forward(unit);
    if (!this.hadKey) this.requestKeyFrame();
  }

  /** PLI/FIR from the viewer. */
  requestKeyFrame(): void {
    const t = this.now();
    if (t - this.lastKeyRequest < this.keyInterval) return;
    this.lastKeyRequest = t;
    this.feed.requestKeyFrame();
  }

  stop(): void {
    this.active = false;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.pending = [];
    this.pendingBytes = 0;
    if (this.turn) clearImmediate(this.turn);
    this.turn = null;
    this.queue = [];
    this.queueHead = 0;
    this.captureOf.clear();
    this.budget = this.packetsPerTurn;
    this.turnSpentMs = 0;
  }

  private onUnit(unit: AccessUnit): void {
    if (!this.active) return;
    if (this.ready) {
      this.forward(unit);
      return;
    }
    if (unit.key) {
      this.stats.unitsDropped += this.pending.length;
      this.pending = [unit];
      this.pendingBytes = unit.data.length;
    } else if (this.pending.length > 0) {
      this.pending.push(unit);
      this.pendingBytes += unit.data.length;
    } else {
      this.stats.unitsDropped += 1;
    }
    if (this.pendingBytes > this.maxPendingBytes) {
      this.stats.unitsDropped += this.pending.length;
      this.feed.reportDrop?.('viewer_lagging', this.pending.length);
      this.pending = [];
      this.pendingBytes = 0;
      this.requestKeyFrame();
    }
  }

  private forward(unit: AccessUnit): void {
    if (!this.hadKey) {
      if (!unit.key) {
        this.stats.unitsDropped += 1;
        this.requestKeyFrame();
        return;
      }
      this.hadKey = true;
      this.stats.firstKeyFrameMs = this.now() - this.startedAt;
    }
    const packets = this.packetizer.packetizeAnnexB(unit.data, unit.pts90k);
    // the frame's capture time rides on its first packet (abs-capture-time, peer.ts)
    if (packets[0]) this.captureOf.set(packets[0], unit.capturedAt);
    for (const packet of packets) this.queue.push(packet);
    this.stats.unitsSent += 1;
    if (unit.key) this.stats.keyUnitsSent += 1;
    this.pump();
  }

  /** Sends what this turn's budget allows; a turn with a spent budget schedules the next. */
  private pump(): void {
    const queued = this.queue.length - this.queueHead;
    // too far behind to yield: all at once (see maxQueuedPackets)
    const flush = queued > this.maxQueuedPackets;
    const n = flush ? queued : Math.min(queued, this.budget);
    const t0 = this.now();
    let sent = 0;
    while (sent < n) {
      const packet = this.queue[this.queueHead]!;
      this.queueHead += 1;
      this.budget -= 1;
      sent += 1;
      const capturedAt = this.captureOf.get(packet);
      if (capturedAt !== undefined) this.captureOf.delete(packet);
      this.send(packet, capturedAt);
      // the turn's time is spent: the rest waits for the next turn (see turnMs)
      if (!flush && this.turnSpentMs + this.now() - t0 >= this.turnMs) {
        this.budget = 0;
        break;
      }
    }
    this.turnSpentMs += this.now() - t0;
    this.stats.packetsSent += sent;
    if (this.queueHead === this.queue.length) {
      this.queue = [];
      this.queueHead = 0;
    } else if (this.queueHead > 1024) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
    const left = this.queue.length - this.queueHead;
    if (left > 0) this.stats.yields += 1;
    // The budget is per turn: any send this turn needs the next turn to give it back.
    if (!this.turn && this.budget < this.packetsPerTurn) this.turn = setImmediate(this.nextTurn);
  }

  private readonly nextTurn = (): void => {
    this.turn = null;
    this.budget = this.packetsPerTurn;
    this.turnSpentMs = 0;
    if (this.active && this.queue.length > this.queueHead) this.pump();
  };
}

/** RFC 6184 (packetization-mode 1) or RFC 7798 payloading on the offer's payload type. */
function packetizerFor(
  codec: VideoCodec,
  ssrc: number,
  maxPayload: number | undefined,
): H264Packetizer | H265Packetizer {
  const opts = { ssrc, ...(maxPayload !== undefined ? { maxPayload } : {}) };
  return codec === 'h265'
    ? new H265Packetizer({ payloadType: H265_PAYLOAD_TYPE, ...opts })
    : new H264Packetizer({ payloadType: H264_PAYLOAD_TYPE, ...opts });
}
