import Fastify, { type FastifyInstance } from 'fastify';
import fastifyWebsocket from '@fastify/websocket';
import { afterEach, describe, expect, it } from 'vitest';
import {
  RTCPeerConnection,
  RTCRtpCodecParameters,
  RTCRtpHeaderExtensionParameters,
  type MediaStreamTrack,
  type RtpPacket,
} from 'werift';
import { SILENT_LOGGER as silent } from '../log';
import type { AccessUnit } from '../media/types';
import {
  answeredVideoCodec,
  browserVideoCodecs,
  h265Fmtp,
  offeredVideoCodecs,
  type VideoCodec,
} from './codecs';
import { janusFeatures, registerJanus } from './gateway';
import { JanusPeer } from './peer';
import { PLAYOUT_DELAY_EXT_ID, PLAYOUT_DELAY_URI, answeredExtensionIds } from './peer-params';
import { ABS_CAPTURE_TIME_EXT_ID, ABS_CAPTURE_TIME_URI } from './rtp-extensions';
import { FakeFeed, JanusTestClient, fakeKeyUnit, waitFor } from './test-support';

describe('video codec negotiation', () => {
  it("reads the console's receive codecs and ignores what it does not know", () => {
    expect(browserVideoCodecs(['h265', 'h264'])).toEqual(['h265', 'h264']);
    expect(browserVideoCodecs(['video/H264', 'video/VP8', 'video/H265', 'hevc'])).toEqual([
      'h264',
      'h265',
    ]);
    expect(browserVideoCodecs(undefined)).toEqual([]);
    expect(browserVideoCodecs('h265')).toEqual([]);
    expect(browserVideoCodecs([1, null, 'x'.repeat(100)])).toEqual([]);
  });

  it('offers H.265 first only when the browser lists it and the device encodes it', () => {
    expect(offeredVideoCodecs(['h265', 'h264'], true)).toEqual(['h265', 'h264']);
    expect(offeredVideoCodecs(['h264', 'h265'], true)).toEqual(['h265', 'h264']);
    expect(offeredVideoCodecs(['h265', 'h264'], false)).toEqual(['h264']);
    expect(offeredVideoCodecs(['h264'], true)).toEqual(['h264']);
    // kvmd's and GL's clients send no list: H.264 as always
    expect(offeredVideoCodecs([], true)).toEqual(['h264']);
  });

  it("takes the first of H264/H265 in the answer's video section", () => {
    const answer = (fmts: string, maps: string[]): string =>
      ['v=0', `m=video 9 UDP/TLS/RTP/SAVPF ${fmts}`, ...maps, 'm=application 9 x 0'].join('\r\n');
    const h265 = 'a=rtpmap:100 H265/90000';
    const h264 = 'a=rtpmap:96 H264/90000';
    expect(answeredVideoCodec(answer('100 96', [h265, h264]))).toBe('h265');
    expect(answeredVideoCodec(answer('96 100', [h265, h264]))).toBe('h264');
    expect(answeredVideoCodec(answer('96', [h264]))).toBe('h264');
    expect(answeredVideoCodec('v=0\r\nm=audio 9 x 111\r\n')).toBe('h264');
  });

  it('offers H265 with level-id, profile-id, tier-flag and tx-mode=SRST before H264', async () => {
    const offer = async (videoCodecs?: VideoCodec[]): Promise<string> => {
      const peer = await JanusPeer.create({
        iceServers: [],
        video: true,
        profileLevelId: '42e01f',
        ...(videoCodecs ? { videoCodecs } : {}),
        log: silent,
      });
      await peer.close();
      return peer.offerSdp;
    };
    const both = await offer(['h265', 'h264']);
    expect(both).toMatch(/^m=video 9 UDP\/TLS\/RTP\/SAVPF 100 96\r$/m);
    expect(both).toContain('a=rtpmap:100 H265/90000\r\n');
    expect(both).toContain('a=fmtp:100 level-id=153;profile-id=1;tier-flag=0;tx-mode=SRST\r\n');
    expect(both).toContain('a=rtcp-fb:100 nack pli\r\n');
    expect(both).toContain('a=rtpmap:96 H264/90000\r\n');
    expect(h265Fmtp(93)).toBe('level-id=93;profile-id=1;tier-flag=0;tx-mode=SRST');
    for (const sdp of [await offer(), await offer(['h264'])]) {
      expect(sdp).toMatch(/^m=video 9 UDP\/TLS\/RTP\/SAVPF 96\r$/m);
      expect(sdp).not.toContain('H265');
    }
  });
});

/** Two NAL units of H.265 (VPS, IDR slice) in Annex B, as the H.265 encoder's units are. */
function hevcKeyUnit(seq: number, sliceBytes: number): AccessUnit {
  const slice = Buffer.alloc(sliceBytes, 0x77);
  slice[0] = 0x26; // IDR_W_RADL
  slice[1] = 0x01;
  const data = Buffer.concat([
    Buffer.from('00000001 40010c01ffff'.replace(/\s/g, ''), 'hex'),
    Buffer.from('00000001', 'hex'),
    slice,
  ]);
  return { data, key: true, seq, capturedAt: seq * 33, pts90k: seq * 3000 };
}

/**
 * A werift peer in the browser's role that receives `codecs` (H.265 and/or H.264) and takes the
 * RTP header extensions of `extensions` (URIs) when the offer has them.
 */
async function browser(offer: string, codecs: VideoCodec[], extensions: string[] = []) {
  const params = {
    h264: () =>
      new RTCRtpCodecParameters({
        mimeType: 'video/H264',
        clockRate: 90_000,
        rtcpFeedback: [{ type: 'nack' }, { type: 'nack', parameter: 'pli' }],
        parameters: 'profile-level-id=42e01f;packetization-mode=1;level-asymmetry-allowed=1',
      }),
    h265: () =>
      new RTCRtpCodecParameters({
        mimeType: 'video/H265',
        clockRate: 90_000,
        rtcpFeedback: [{ type: 'nack' }, { type: 'nack', parameter: 'pli' }],
        parameters: 'level-id=180;profile-id=1;tier-flag=0;tx-mode=SRST',
      }),
  };
  const pc = new RTCPeerConnection({
    iceServers: [],
    bundlePolicy: 'max-bundle',
    codecs: { video: codecs.map((c) => params[c]()) },
    headerExtensions: {
      video: extensions.map((uri, i) => new RTCRtpHeaderExtensionParameters({ id: 1 + i, uri })),
    },
  });
  pcs.push(pc);
  const rtp: RtpPacket[] = [];
  pc.onTrack.subscribe((track: MediaStreamTrack) => {
    track.onReceiveRtp.subscribe((p) => rtp.push(p));
  });
  await pc.setRemoteDescription({ type: 'offer', sdp: offer });
  const answer = await pc.createAnswer();
  // offline: werift would ask its default STUN server and wait for it
  for (const t of pc.iceTransports) t.connection.stunServer = undefined;
  await pc.setLocalDescription(answer);
  return { answer: pc.localDescription!.sdp, rtp };
}

const apps: FastifyInstance[] = [];
const clients: JanusTestClient[] = [];
const pcs: RTCPeerConnection[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const pc of pcs.splice(0)) await pc.close();
  for (const app of apps.splice(0)) await app.close();
});

describe('janus gateway: H.265 where the browser takes it', () => {
  async function watch(opts: {
    params: Record<string, unknown>;
    receives: VideoCodec[];
    extensions?: string[];
  }) {
    const app = Fastify();
    apps.push(app);
    await app.register(fastifyWebsocket);
    const feed = new FakeFeed();
    const h265Feed = new FakeFeed();
    feed.push(fakeKeyUnit(1));
    h265Feed.push(hevcKeyUnit(1, 3000));
    registerJanus(app, {
      feed,
      h265Feed,
      iceServers: () => [],
      features: () => janusFeatures([]),
      onInput: () => undefined,
      onViewerGone: () => undefined,
      log: silent,
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    const c = await JanusTestClient.connect(`ws://127.0.0.1:${port}/janus/ws`);
    clients.push(c);
    const ids = await c.attach('janus.plugin.ustreamer', 'kvm-test');
    const send = (body: Record<string, unknown>, jsep?: Record<string, unknown>) =>
      c.request({
        janus: 'message',
        session_id: ids.session,
        handle_id: ids.handle,
        body,
        ...(jsep ? { jsep } : {}),
      });
    await send({ request: 'watch', params: opts.params });
    const offer = await c.startedOffer();
    const b = await browser(offer, opts.receives, opts.extensions);
    await send({ request: 'start' }, { type: 'answer', sdp: b.answer });
    await waitFor(() => b.rtp.length > 0, 10_000);
    return { offer, answer: b.answer, rtp: b.rtp, feed, h265Feed };
  }

  it('sends RFC 7798 packets of the H.265 feed to a browser that answers H265', async () => {
    const r = await watch({ params: { codecs: ['h265', 'h264'] }, receives: ['h265', 'h264'] });
    expect(r.offer).toContain('a=rtpmap:100 H265/90000');
    await waitFor(() => r.rtp.some((p) => p.header.marker));
    expect(r.h265Feed.subscribes).toBe(1);
    expect(r.feed.subscribes).toBe(0);
    const types = r.rtp.map((p) => ({
      pt: p.header.payloadType,
      nal: (p.payload[0]! >> 1) & 0x3f,
    }));
    // the VPS alone (the 3000-byte slice cannot join it), then FUs (49) of the IDR slice
    expect(types[0]).toEqual({ pt: 100, nal: 32 });
    expect(types.slice(1).every((t) => t.pt === 100 && t.nal === 49)).toBe(true);
    expect(r.rtp[1]!.payload[2]).toBe(0x80 | 19); // FU header: S, IDR_W_RADL
  });

  it('falls back to H.264 when the answer leaves H265 out', async () => {
    const r = await watch({ params: { codecs: ['h265', 'h264'] }, receives: ['h264'] });
    expect(r.offer).toContain('a=rtpmap:100 H265/90000');
    expect(r.feed.subscribes).toBe(1);
    expect(r.h265Feed.subscribes).toBe(0);
    expect(r.rtp[0]!.header.payloadType).toBe(96);
    expect(r.rtp[0]!.payload[0]! & 0x1f).toBe(24); // STAP-A of SPS + PPS
  });

  it('offers H.264 alone to a client that lists no codecs (kvmd, GL)', async () => {
    const r = await watch({ params: {}, receives: ['h265', 'h264'] });
    expect(r.offer).not.toContain('H265');
    expect(r.feed.subscribes).toBe(1);
    expect(r.rtp[0]!.header.payloadType).toBe(96);
  });

  it("writes each header extension under the answer's id, not the one the offer asked for", async () => {
    const r = await watch({
      params: {},
      receives: ['h264'],
      extensions: [PLAYOUT_DELAY_URI, ABS_CAPTURE_TIME_URI],
    });
    const ids = answeredExtensionIds(r.answer, 'v');
    const playout = ids.get(PLAYOUT_DELAY_URI);
    const capture = ids.get(ABS_CAPTURE_TIME_URI);
    expect(playout).toBeDefined();
    expect(capture).toBeDefined();
    // werift numbers the offer's extensions itself: the ids asked for are not the ones agreed
    expect([playout, capture]).not.toEqual([PLAYOUT_DELAY_EXT_ID, ABS_CAPTURE_TIME_EXT_ID]);
    for (const p of r.rtp) {
      // a browser ignores an extension under an id it did not agree to
      for (const e of p.header.extensions) expect([playout, capture]).toContain(e.id);
      expect([...p.header.extensions.find((e) => e.id === playout)!.payload]).toEqual([0, 0, 0]);
    }
    // the capture time rides on each frame's first packet
    expect(r.rtp[0]!.header.extensions.find((e) => e.id === capture)?.payload.length).toBe(8);
  });

  it('writes no header extension the answer left out', async () => {
    const r = await watch({ params: {}, receives: ['h264'], extensions: [ABS_CAPTURE_TIME_URI] });
    expect(answeredExtensionIds(r.answer, 'v').has(PLAYOUT_DELAY_URI)).toBe(false);
    const capture = answeredExtensionIds(r.answer, 'v').get(ABS_CAPTURE_TIME_URI);
    for (const p of r.rtp) for (const e of p.header.extensions) expect(e.id).toBe(capture);
  });
});
