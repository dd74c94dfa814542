/**
 * One WebRTC peer connection of a Janus handle, on werift: the server is the offerer.
 *
 * Offer shape (docs/webrtc.md): BUNDLE of
 *   m=video, mid `v`, sendonly, H264/90000 payload type 96, packetization-mode=1, rtcp-fb nack,
 *     nack pli, ccm fir, goog-remb (left out when the handle watches without video);
 *     H265/90000 payload type 100 listed first when the viewer's browser takes H.265 (codecs.ts);
 *   m=audio, mid `a`, Opus/48000/2 payload type 111, minptime=10;useinbandfec=1: `sendonly`,
 *     or `sendrecv` when the browser's microphone is wanted (left out when not listening);
 *   m=video, mid `c`, recvonly, VP8/90000 payload type 98: the browser's camera, with `camera`
 *     (issue 24: it goes to the gadget's USB webcam);
 *   m=application, mid `d`, the SCTP association of the `hid` data channel the server opens,
 *     so a channel the browser opens later needs no renegotiation (architecture.md).
 *
 * werift facts this file works around (measured on werift 0.23.0):
 * - with no STUN server configured it still asks stun.l.google.com and gathering waits 5 s
 *   for the answer; offline that is 5 s before the offer goes out. We clear its STUN server
 *   unless the configured list has one.
 * - Chromium sends only mDNS (`.local`) host candidates; werift resolves them for 10 s and
 *   fails. They are dropped: the browser's own connectivity checks reach our candidates and
 *   werift learns the browser's address as peer-reflexive. TCP candidates are dropped too
 *   (werift's ICE is UDP only).
 * - candidates must follow the answer: they are queued until it is applied, and
 *   addIceCandidate is never awaited.
 * - its UDP sockets keep the kernel's default receive buffer, which a stalled loop overflows
 *   (input packets lost, then SCTP retransmission timeouts): enlarged (ice-sockets.ts).
 * - its SCTP sends a SACK for every DATA chunk, one DTLS record and UDP send per input message:
 *   delayed SACKs as RFC 4960 6.2 allows (sctp-sack.ts).
 * - its DTLS server listens only once its own ICE has nominated a pair, after the browser has
 *   sent its ClientHello: the early records are kept for it (early-dtls.ts).
 */
import { EventEmitter } from 'node:events';
import {
  MediaStreamTrack,
  RTCDtlsTransport,
  RTCPeerConnection,
  RTCRtpCodecParameters,
  RTCRtpHeaderExtensionParameters,
  type RTCDataChannel,
  type RTCRtpTransceiver,
  type RtcpPacket,
} from 'werift';
import type { Logger } from '../log';
import {
  AUDIO_MID,
  CAMERA_MID,
  DATA_MID,
  H264_PAYLOAD_TYPE,
  INPUT_CHANNEL_LABEL,
  MAX_REMOTE_CANDIDATES,
  OPUS_PAYLOAD_TYPE,
  PLAYOUT_DELAY_EXT_ID,
  PLAYOUT_DELAY_URI,
  VIDEO_MID,
  VP8_PAYLOAD_TYPE,
  IcePortsExhaustedError,
  answeredExtensionIds,
  hostCandidatePorts,
  natSdp,
  toWeriftIceServers,
  unusableCandidate,
  withPlayoutDelay,
  type CandidateInit,
  type IceNetworkConfig,
  type IceServerConfig,
} from './peer-params';
import { enlargeIceReceiveBuffers } from './ice-sockets';
import { delaySacks } from './sctp-sack';
import { keepEarlyDtls } from './early-dtls';
import { H265_PAYLOAD_TYPE, answeredVideoCodec, h265Fmtp, type VideoCodec } from './codecs';
import {
  ABS_CAPTURE_TIME_EXT_ID,
  ABS_CAPTURE_TIME_URI,
  withAbsCaptureTime,
} from './rtp-extensions';

export interface PeerOptions {
  iceServers: readonly IceServerConfig[];
  /** Offer the H.264 video section. */
  video: boolean;
  /** Offer the Opus section (the remote computer's sound). */
  audio?: boolean;
  /** The Opus section is `sendrecv`: the browser's microphone comes back on it. */
  mic?: boolean;
  /** Add the recvonly VP8 section of the browser's camera (mid `c`). */
  camera?: boolean;
  /** profile-level-id offered in the fmtp line. */
  profileLevelId: string;
  /** The video section's codecs, preferred first (codecs.ts); default H.264 alone. */
  videoCodecs?: readonly VideoCodec[];
  /** `webrtc.port_range` and `webrtc.nat_1to1_ips` (none: any port, own addresses). */
  ice?: IceNetworkConfig;
  log: Logger;
}

/**
 * Peers with a port range gather one at a time: werift probes a port of the range free, closes
 * the probe, then binds it again, and that socket has no 'error' listener (a failed bind would
 * be an uncaught error). Not seen in tests (8 concurrent offers took distinct ports), but
 * serialized, two peers of this process can never race for a port.
 */
let rangeGathering: Promise<unknown> = Promise.resolve();

/** Data channel framing (wire-protocol.md 2.8): [op][payload], ping 0x00 → pong 0xFF. */
const OP_PING = 0x00;
const OP_PONG = Buffer.from([0xff]);
/** Ops 1-5 plus the release-all (0x06) and keepalive (0x07) extensions (protocol hid/state). */
const MAX_INPUT_OP = 0x07;

/** RTCP payload-specific feedback (RFC 4585 6.3): FMT 1 PLI, FMT 4 FIR (RFC 5104). */
const RTCP_PSFB = 206;
const PSFB_PLI = 1;
const PSFB_FIR = 4;

export type PeerState = 'new' | 'connecting' | 'connected' | 'closed';

export interface PeerEvents {
  /** ICE and DTLS are up; SCTP may still be opening. */
  mediaReady: [];
  /** ICE, DTLS and SCTP are up: Janus `webrtcup`. */
  connected: [];
  /** The connection failed or the browser closed it; the peer is closed already. */
  gone: [reason: string];
  /** A binary input frame, ops 1-7 (wire-protocol.md 2.8 plus our two extensions). */
  input: [frame: Buffer];
  /** An input channel closed: whatever it held must be released. */
  inputClosed: [];
  /** PLI or FIR from the browser. */
  keyFrameRequest: [];
  /** One RTP packet of the browser's microphone, serialized (only with `mic`). */
  micRtp: [packet: Buffer];
  /** One RTP packet of the browser's camera, serialized (only with `camera`). */
  cameraRtp: [packet: Buffer];
}

export class JanusPeer extends EventEmitter<PeerEvents> {
  private readonly pc: RTCPeerConnection;
  private readonly video: RTCRtpTransceiver | null;
  private readonly audio: RTCRtpTransceiver | null;
  private camera: RTCRtpTransceiver | null = null;
  /** The browser camera's SSRC (for PLI), from its first packet. */
  private cameraSsrc: number | null = null;
  private state: PeerState = 'new';
  private answered = false;
  private readonly pendingCandidates: CandidateInit[] = [];
  private remoteCandidates = 0;
  private readonly disposers: (() => void)[] = [];
  /** The playout-delay extension's id in the browser's answer; null: not accepted. */
  private playoutDelayId: number | null = null;
  /** What the browser's answer chose for the video section (codecs.ts). */
  private negotiatedVideo: VideoCodec = 'h264';
  /** abs-capture-time's id in the browser's answer; null: not accepted. */
  private absCaptureTimeId: number | null = null;

  private constructor(
    private readonly opts: PeerOptions,
    readonly offerSdp: string,
    pc: RTCPeerConnection,
    video: RTCRtpTransceiver | null,
    audio: RTCRtpTransceiver | null,
  ) {
    super();
    this.pc = pc;
    this.video = video;
    this.audio = audio;
  }

  /** Builds the peer connection and its offer (gathering is complete: host candidates inline). */
  static async create(opts: PeerOptions): Promise<JanusPeer> {
    if (!opts.ice?.portRange) return JanusPeer.build(opts);
    const turn = rangeGathering.then(() => JanusPeer.build(opts));
    rangeGathering = turn.catch(() => undefined);
    return turn;
  }

  private static async build(opts: PeerOptions): Promise<JanusPeer> {
    const portRange = opts.ice?.portRange ?? null;
    const iceServers = toWeriftIceServers(opts.iceServers);
    const h264 = opts.video ? h264Codec(opts.profileLevelId) : null;
    const h265 = opts.video && opts.videoCodecs?.includes('h265') ? h265Codec() : null;
    // the offer's order is the preference (RFC 3264): H.265 first when it is offered at all
    const videoCodecs = [h265, h264].filter((c): c is RTCRtpCodecParameters => c !== null);
    const vp8 = opts.camera ? vp8Codec() : null;
    const pc = new RTCPeerConnection({
      iceServers,
      bundlePolicy: 'max-bundle',
      ...(portRange ? { icePortRange: [portRange[0], portRange[1]] as [number, number] } : {}),
      codecs: {
        // Fresh objects per connection: werift writes payload types into them.
        // the camera's VP8 is here too: werift negotiates an answer against these; each
        // section offers only its own (the transceivers' codecs below)
        video: [...videoCodecs, vp8].filter((c): c is RTCRtpCodecParameters => c !== null),
        audio: opts.audio ? [opusCodec()] : [],
      },
      // playout-delay min=max=0 (webrtc.org extension, as ustreamer sends it): Chromium then
      // renders each frame as soon as it is decoded instead of holding a render delay.
      headerExtensions: {
        video: opts.video
          ? [
              new RTCRtpHeaderExtensionParameters({
                id: PLAYOUT_DELAY_EXT_ID,
                uri: PLAYOUT_DELAY_URI,
              }),
              // the frame's capture time, for the console's latency readout (rtp-extensions.ts)
              new RTCRtpHeaderExtensionParameters({
                id: ABS_CAPTURE_TIME_EXT_ID,
                uri: ABS_CAPTURE_TIME_URI,
              }),
            ]
          : [],
        audio: [],
      },
    });
    let video: RTCRtpTransceiver | null = null;
    let audio: RTCRtpTransceiver | null = null;
    try {
      if (opts.video) {
        video = pc.addTransceiver(new MediaStreamTrack({ kind: 'video' }), {
          direction: 'sendonly',
        });
        video.mid = VIDEO_MID;
        video.codecs = videoCodecs;
      }
      if (opts.audio) {
        audio = pc.addTransceiver(new MediaStreamTrack({ kind: 'audio' }), {
          direction: opts.mic ? 'sendrecv' : 'sendonly',
        });
        audio.mid = AUDIO_MID;
      }
      let camera: RTCRtpTransceiver | null = null;
      if (opts.camera) {
        camera = pc.addTransceiver('video', { direction: 'recvonly' });
        camera.mid = CAMERA_MID;
        if (vp8) camera.codecs = [vp8];
      }
      const channel = pc.createDataChannel(INPUT_CHANNEL_LABEL, { ordered: true });
      if (pc.sctpTransport) pc.sctpTransport.mid = DATA_MID;
      const offer = await pc.createOffer();
      if (!iceServers.some((s) => /^stuns?:/.test(s.urls))) {
        for (const transport of pc.iceTransports) transport.connection.stunServer = undefined;
      }
      await pc.setLocalDescription(offer);
      const sdp = pc.localDescription?.sdp;
      if (!sdp) throw new Error('werift produced no local description');
      // the sockets are bound now: room for a stalled loop's input packets (ice-sockets.ts)
      const buffers = enlargeIceReceiveBuffers(pc);
      if (buffers.length === 0) opts.log.debug({}, 'janus: no werift ICE socket found to enlarge');
      // the browser's ClientHello may come before werift's DTLS server listens (early-dtls.ts)
      if (!pc.dtlsTransports.every((t) => keepEarlyDtls(t))) {
        opts.log.debug({}, 'janus: werift DTLS not as checked, early records not kept');
      }
      // werift logs a bind it could not make and gathers no candidate for that address: with
      // none left, no browser could reach this peer
      if (portRange && hostCandidatePorts(sdp).length === 0) {
        throw new IcePortsExhaustedError(portRange);
      }
      const offered = natSdp(sdp, opts.ice?.nat1to1Ips ?? []);
      const peer = new JanusPeer(opts, offered, pc, video, audio);
      peer.camera = camera;
      peer.watchConnection();
      peer.adoptChannel(channel);
      return peer;
    } catch (err) {
      await pc.close().catch(() => undefined);
      throw err;
    }
  }

  get connectionState(): PeerState {
    return this.state;
  }

  /** Remote candidates taken so far (at most MAX_REMOTE_CANDIDATES). */
  get remoteCandidateCount(): number {
    return this.remoteCandidates;
  }

  /** Asks the browser for a camera key frame (RTCP PLI); false before its first packet. */
  requestCameraKeyFrame(): boolean {
    const ssrc = this.cameraSsrc;
    if (!this.camera || ssrc === null || this.state === 'closed') return false;
    this.camera.receiver.sendRtcpPLI(ssrc).catch(() => undefined);
    return true;
  }

  /** The video codec the browser's answer chose (H.264 before the answer). */
  get videoCodec(): VideoCodec {
    return this.negotiatedVideo;
  }

  get hasAnswer(): boolean {
    return this.answered;
  }

  /** Applies the browser's answer, then the candidates that arrived before it. */
  async applyAnswer(sdp: string): Promise<void> {
    if (this.state === 'closed') throw new Error('peer closed');
    if (this.answered) throw new Error('answer already applied');
    await this.pc.setRemoteDescription({ type: 'answer', sdp });
    this.answered = true;
    // the association of the answer's (bundled) transport: delayed SACKs (sctp-sack.ts)
    if (!delaySacks(this.pc.sctpTransport?.sctp)) {
      this.opts.log.debug({}, 'janus: werift SCTP not as checked, SACKs left immediate');
    }
    // the answer's ids, not the ones asked for: werift renumbers the offer's extensions, and a
    // packet whose id the browser does not know has its extension ignored (until issue 28's
    // seventeenth round the packets said 6 and 7 where the SDP said 1 and 2: Chromium held
    // every frame for a render delay, and read no capture time)
    const ids = answeredExtensionIds(sdp, VIDEO_MID);
    this.playoutDelayId = ids.get(PLAYOUT_DELAY_URI) ?? null;
    this.negotiatedVideo = answeredVideoCodec(sdp);
    this.absCaptureTimeId = ids.get(ABS_CAPTURE_TIME_URI) ?? null;
    if (this.state === 'new') this.state = 'connecting';
    for (const c of this.pendingCandidates.splice(0)) this.addCandidateNow(c);
  }

  /** A trickled candidate; dropped when werift cannot use it (see the file comment). */
  addCandidate(init: CandidateInit): void {
    if (this.state === 'closed' || !init.candidate) return;
    const reason = unusableCandidate(init.candidate);
    if (reason) {
      this.opts.log.debug(
        { candidate: init.candidate.slice(0, 200), reason },
        'janus: candidate dropped',
      );
      return;
    }
    if (this.remoteCandidates >= MAX_REMOTE_CANDIDATES) {
      this.opts.log.debug({ max: MAX_REMOTE_CANDIDATES }, 'janus: candidate over the cap dropped');
      return;
    }
    this.remoteCandidates += 1;
    if (!this.answered) this.pendingCandidates.push(init);
    else this.addCandidateNow(init);
  }

  /**
   * Sends one serialized RTP packet on the video section (no-op until DTLS is up).
   * `capturedAt`: the frame's capture time (performance.now() ms) on its first packet, sent as
   * abs-capture-time when the browser took it.
   */
  sendRtp(packet: Buffer, capturedAt?: number): void {
    if (this.state === 'closed' || !this.video) return;
    if (this.playoutDelayId !== null) packet = withPlayoutDelay(packet, this.playoutDelayId);
    if (this.absCaptureTimeId !== null && capturedAt !== undefined) {
      packet = withAbsCaptureTime(
        packet,
        this.absCaptureTimeId,
        performance.timeOrigin + capturedAt,
      );
    }
    this.video.sender.sendRtp(packet).catch((err: unknown) => {
      this.opts.log.debug({ err: String(err) }, 'janus: RTP send failed');
    });
  }

  /** Sends one serialized Opus RTP packet on the audio section (no-op until DTLS is up). */
  sendAudioRtp(packet: Buffer): void {
    if (this.state === 'closed' || !this.audio) return;
    this.audio.sender.sendRtp(packet).catch((err: unknown) => {
      this.opts.log.debug({ err: String(err) }, 'janus: audio RTP send failed');
    });
  }

  /** SSRC werift stamps on our audio packets. */
  get audioSsrc(): number {
    return this.audio?.sender.ssrc ?? 0;
  }

  /** SSRC werift stamps on our video packets. */
  get videoSsrc(): number {
    return this.video?.sender.ssrc ?? 0;
  }

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    for (const dispose of this.disposers.splice(0)) dispose();
    await this.pc.close().catch((err: unknown) => {
      this.opts.log.debug({ err: String(err) }, 'janus: close failed');
    });
  }

  private addCandidateNow(init: CandidateInit): void {
    this.pc
      .addIceCandidate({
        candidate: init.candidate,
        sdpMid: init.sdpMid ?? undefined,
        sdpMLineIndex: init.sdpMLineIndex ?? undefined,
        usernameFragment: init.usernameFragment ?? undefined,
      })
      .catch((err: unknown) => {
        this.opts.log.debug(
          { err: String(err), candidate: init.candidate },
          'janus: bad candidate',
        );
      });
  }

  private watchConnection(): void {
    const { pc } = this;
    // Timings in the debug log: ms since the offer was made.
    const t0 = performance.now();
    this.disposers.push(
      pc.iceConnectionStateChange.subscribe((s) => {
        this.opts.log.debug({ ice: s, ms: Math.round(performance.now() - t0) }, 'janus: ICE state');
      }).unSubscribe,
      pc.connectionStateChange.subscribe((s) => {
        this.opts.log.debug({ state: s, ms: Math.round(performance.now() - t0) }, 'janus: state');
        if (this.state === 'closed') return;
        if (s === 'connected') {
          this.state = 'connected';
          this.emit('connected');
        } else if (s === 'failed' || s === 'closed') {
          void this.close().then(() => this.emit('gone', s === 'failed' ? 'ICE failed' : 'Closed'));
        }
      }).unSubscribe,
      pc.onDataChannel.subscribe((channel) => this.adoptChannel(channel)).unSubscribe,
    );
    // DTLS up: the video sender says so, or the audio one when the handle only listens
    const media = this.video ?? this.audio ?? this.camera;
    if (media) {
      this.disposers.push(
        media.sender.onReady.subscribe(() => {
          this.opts.log.debug({ ms: Math.round(performance.now() - t0) }, 'janus: DTLS up');
          if (this.state !== 'closed') this.emit('mediaReady');
        }).unSubscribe,
      );
    }
    if (this.audio && this.opts.mic) {
      this.disposers.push(
        this.audio.onTrack.subscribe((track) => {
          this.disposers.push(
            track.onReceiveRtp.subscribe((rtp) => {
              if (this.state !== 'closed') this.emit('micRtp', rtp.serialize());
            }).unSubscribe,
          );
        }).unSubscribe,
      );
    }
    if (this.camera) {
      this.disposers.push(
        this.camera.onTrack.subscribe((track) => {
          this.disposers.push(
            track.onReceiveRtp.subscribe((rtp) => {
              this.cameraSsrc = rtp.header.ssrc;
              if (this.state !== 'closed') this.emit('cameraRtp', rtp.serialize());
            }).unSubscribe,
          );
        }).unSubscribe,
      );
    }
    if (this.video) {
      const { sender } = this.video;
      this.disposers.push(
        sender.onRtcp.subscribe((packet: RtcpPacket) => {
          if (packet.type !== RTCP_PSFB) return;
          const count = (packet as { feedback?: { count?: number } }).feedback?.count;
          if (count === PSFB_PLI || count === PSFB_FIR) this.emit('keyFrameRequest');
        }).unSubscribe,
      );
    }
  }

  /** The server's `hid` channel and any channel the browser opens: same framing. */
  private adoptChannel(channel: RTCDataChannel): void {
    this.disposers.push(
      channel.onMessage.subscribe((data) => {
        if (this.state === 'closed' || typeof data === 'string' || data.length === 0) return;
        const op = data[0]!;
        if (op === OP_PING) {
          if (channel.readyState === 'open') channel.send(OP_PONG);
        } else if (op <= MAX_INPUT_OP) {
          this.emit('input', data);
        }
      }).unSubscribe,
      channel.stateChanged.subscribe((state) => {
        if (state === 'closed') this.emit('inputClosed');
      }).unSubscribe,
    );
  }
}

/**
 * werift makes one self-signed DTLS certificate per process, on the first offer (100-300 ms
 * on a busy 2-core machine): make it before the first viewer asks.
 */
export function prewarmDtlsCertificate(): Promise<void> {
  return RTCDtlsTransport.SetupCertificate().then(
    () => undefined,
    () => undefined,
  );
}

function vp8Codec(): RTCRtpCodecParameters {
  return new RTCRtpCodecParameters({
    mimeType: 'video/VP8',
    clockRate: 90_000,
    payloadType: VP8_PAYLOAD_TYPE,
    rtcpFeedback: [{ type: 'nack' }, { type: 'nack', parameter: 'pli' }],
  });
}

function opusCodec(): RTCRtpCodecParameters {
  return new RTCRtpCodecParameters({
    mimeType: 'audio/opus',
    clockRate: 48_000,
    channels: 2,
    payloadType: OPUS_PAYLOAD_TYPE,
    parameters: 'minptime=10;useinbandfec=1',
  });
}

/** The RTCP feedback every video codec offers: NACK, PLI, FIR, REMB. */
function videoFeedback(): RTCRtpCodecParameters['rtcpFeedback'] {
  return [
    { type: 'nack' },
    { type: 'nack', parameter: 'pli' },
    { type: 'ccm', parameter: 'fir' },
    { type: 'goog-remb' },
  ];
}

function h265Codec(): RTCRtpCodecParameters {
  return new RTCRtpCodecParameters({
    mimeType: 'video/H265',
    clockRate: 90_000,
    payloadType: H265_PAYLOAD_TYPE,
    rtcpFeedback: videoFeedback(),
    parameters: h265Fmtp(),
  });
}

function h264Codec(profileLevelId: string): RTCRtpCodecParameters {
  return new RTCRtpCodecParameters({
    mimeType: 'video/H264',
    clockRate: 90_000,
    payloadType: H264_PAYLOAD_TYPE,
    rtcpFeedback: videoFeedback(),
    parameters: `profile-level-id=${profileLevelId};packetization-mode=1;level-asymmetry-allowed=1`,
  });
}
