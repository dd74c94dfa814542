/**
 * Sound through the Janus gateway end to end (issue 14): werift plays the browser, the server
 * runs the real AudioService over the testbed's sound with real ffmpeg. The remote computer's
 * tone arrives as Opus RTP; the browser's microphone reaches the testbed, which hears it.
 */
import { execFile } from 'node:child_process';
import Fastify, { type FastifyInstance } from 'fastify';
import fastifyWebsocket from '@fastify/websocket';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MediaStreamTrack, RTCPeerConnection, RTCRtpCodecParameters, type RtpPacket } from 'werift';
import { DisabledAudio } from '../drivers/audio/disabled';
import { dominantFrequency } from '../drivers/audio/tone';
import type { AudioDriver } from '../drivers/audio/types';
import { TestbedAudio } from '../drivers/audio/testbed';
import { SILENT_LOGGER } from '../log';
import { AudioHub } from '../media/audio-hub';
import { MicSink } from '../media/mic-sink';
import { OggOpusReader } from '../media/ogg';
import { OpusPacketizer } from '../media/opus-rtp';
import { AudioService } from '../services/audio/audio-service';
import { janusFeatures, registerJanus } from './gateway';
import { FakeFeed, JanusTestClient, pluginData, type JanusMessage } from './test-support';
import { decodeOpus } from '../media/opus-test-support';

const PLUGIN = 'janus.plugin.ustreamer';

interface Rig {
  app: FastifyInstance;
  audio: AudioService;
  url: string;
}
const rigs: Rig[] = [];
const clients: JanusTestClient[] = [];
const browsers: RTCPeerConnection[] = [];
afterEach(async () => {
  for (const pc of browsers.splice(0)) await pc.close();
  for (const c of clients.splice(0)) await c.close();
  for (const r of rigs.splice(0)) {
    await r.app.close();
    await r.audio.dispose();
  }
});

async function rig(driver: AudioDriver, enableMic: boolean): Promise<Rig> {
  const app = Fastify();
  await app.register(fastifyWebsocket);
  const audio = new AudioService({
    driver,
    hub: new AudioHub(driver, SILENT_LOGGER, { graceMs: 100 }),
    mic: new MicSink(driver, SILENT_LOGGER, { idleMs: 2000 }),
    enableMic,
  });
  registerJanus(app, {
    feed: new FakeFeed(),
    iceServers: () => [],
    features: () => janusFeatures([], audio.features()),
    onInput: () => undefined,
    onViewerGone: () => undefined,
    log: SILENT_LOGGER,
    audio,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const r = { app, audio, url: `ws://127.0.0.1:${port}/janus/ws` };
  rigs.push(r);
  return r;
}

async function session(
  r: Rig,
): Promise<{ c: JanusTestClient; send: (body: object, jsep?: object) => Promise<JanusMessage> }> {
  const c = await JanusTestClient.connect(r.url);
  clients.push(c);
  const ids = await c.attach(PLUGIN, 'oid-audio');
  const send = (body: object, jsep?: object): Promise<JanusMessage> =>
    c.request({
      janus: 'message',
      session_id: ids.session,
      handle_id: ids.handle,
      body,
      ...(jsep ? { jsep } : {}),
    });
  return { c, send };
}

/** The browser's side: Opus only, sending its microphone when the offer lets it. */
async function browser(offer: string): Promise<{
  pc: RTCPeerConnection;
  answer: string;
  rtp: RtpPacket[];
  sendMic: (packet: Buffer) => void;
  ready: Promise<void>;
}> {
  const pc = new RTCPeerConnection({
    iceServers: [],
    bundlePolicy: 'max-bundle',
    codecs: {
      audio: [new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48000, channels: 2 })],
    },
  });
  browsers.push(pc);
  const rtp: RtpPacket[] = [];
  pc.onTrack.subscribe((track) => track.onReceiveRtp.subscribe((p) => rtp.push(p)));
  await pc.setRemoteDescription({ type: 'offer', sdp: offer });
  const audio = pc.getTransceivers().find((t) => t.kind === 'audio')!;
  const micTrack = new MediaStreamTrack({ kind: 'audio' });
  if (offer.includes('a=sendrecv')) {
    audio.setDirection('sendrecv');
    await audio.sender.replaceTrack(micTrack);
  }
  const answer = await pc.createAnswer();
  for (const t of pc.iceTransports) t.connection.stunServer = undefined;
  await pc.setLocalDescription(answer);
  const ready = new Promise<void>((resolve) => audio.sender.onReady.subscribe(() => resolve()));
  return {
    pc,
    answer: pc.localDescription!.sdp,
    rtp,
    sendMic: (packet) => void audio.sender.sendRtp(packet),
    ready,
  };
}

function opusTone(hz: number, seconds: number): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    execFile(
      'ffmpeg',
      ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i'].concat(
        [`sine=frequency=${hz}:sample_rate=48000:duration=${seconds}`, '-af', 'volume=4'],
        ['-ac', '2', '-c:a', 'libopus', '-frame_duration', '20', '-f', 'ogg', 'pipe:1'],
      ),
      { encoding: 'buffer', timeout: 20_000, maxBuffer: 16 << 20 },
      (err, stdout) => (err ? reject(err) : resolve(new OggOpusReader().push(stdout))),
    );
  });
}

let mic600: Buffer[];
beforeAll(async () => {
  mic600 = await opusTone(600, 1);
});

describe('janus gateway: audio', () => {
  it('answers features: audio when the target has sound, mic when also enabled', async () => {
    for (const [driver, enableMic, expected] of [
      [new TestbedAudio(), true, { audio: true, mic: true }],
      [new TestbedAudio(), false, { audio: true, mic: false }],
      [new DisabledAudio(), true, { audio: false, mic: false }],
    ] as const) {
      const r = await rig(driver, enableMic);
      const { c, send } = await session(r);
      await send({ request: 'features' });
      const ev = await c.pluginEvent('features');
      expect((pluginData(ev)!['result'] as { features: object }).features).toEqual(expected);
    }
  });

  it('offers no audio section when not asked, or when the target has no sound', async () => {
    for (const [driver, params] of [
      [new TestbedAudio(), { video: true }],
      [new DisabledAudio(), { audio: true, mic: true }],
    ] as const) {
      const r = await rig(driver, true);
      const { c, send } = await session(r);
      await send({ request: 'watch', params });
      const offer = await c.startedOffer();
      expect(offer).not.toContain('m=audio');
    }
    // mic asked for while it is not enabled: the section is there, sendonly
    const r = await rig(new TestbedAudio(), false);
    const { c, send } = await session(r);
    await send({ request: 'watch', params: { audio: true, mic: true, video: false } });
    const offer = await c.startedOffer();
    expect(offer).toContain('m=audio');
    expect(offer).toContain('a=sendonly');
  });

  it("sends the remote computer's tone as Opus RTP and plays the browser's microphone", async () => {
    const driver = new TestbedAudio();
    const r = await rig(driver, true);
    const { c, send } = await session(r);
    await send({ request: 'watch', params: { audio: true, mic: true, video: false } });
    const offer = await c.startedOffer();
    expect(offer).toContain('m=audio 9 UDP/TLS/RTP/SAVPF 111');
    expect(offer).toContain('a=sendrecv');
    expect(offer).not.toContain('m=video');
    const b = await browser(offer);
    await send({ request: 'start' }, { type: 'answer', sdp: b.answer });
    await c.next((m) => m.janus === 'webrtcup', 10_000);
    expect(r.audio.getState().listeners).toBe(1);

    // sound → browser
    await vi.waitFor(() => expect(b.rtp.length).toBeGreaterThan(3), { timeout: 10_000 });
    const first = b.rtp[0]!;
    expect(first.header.payloadType).toBe(111);
    expect(first.header.marker).toBe(true);
    const from = b.rtp.length;
    driver.tone(1000, 600);
    await vi.waitFor(() => expect(b.rtp.length).toBeGreaterThan(from + 35), { timeout: 10_000 });
    const got = b.rtp.slice(from);
    const seqs = got.map((p) => p.header.sequenceNumber);
    expect(seqs.every((s, i) => i === 0 || s === ((seqs[i - 1]! + 1) & 0xffff))).toBe(true);
    const ts = got.map((p) => p.header.timestamp);
    expect(ts.every((t, i) => i === 0 || t === (ts[i - 1]! + 960) >>> 0)).toBe(true);
    const pcm = await decodeOpus(got.map((p) => ({ data: p.payload })));
    const mid = pcm.subarray(0.2 * 96000, 0.5 * 96000);
    expect(dominantFrequency(mid, 48000, 2, { minHz: 500, maxHz: 2000 }).hz).toBe(1000);

    // microphone → remote computer
    await b.ready;
    const mark = driver.mark();
    const packetizer = new OpusPacketizer({ ssrc: 0x1234 });
    for (const opus of mic600) {
      b.sendMic(packetizer.packetize(opus)!);
      await new Promise((res) => setTimeout(res, 5));
    }
    await vi.waitFor(() => expect(driver.heard(600).at).not.toBeNull(), { timeout: 10_000 });
    expect(driver.heard(600).at!).toBeGreaterThan(mark);
    expect(r.audio.getState().mic.active).toBe(true);

    // hangup: no listener, the microphone stops at once
    await send({ request: 'stop' });
    await c.pluginEvent('stopped');
    await vi.waitFor(() => expect(r.audio.getState().listeners).toBe(0), { timeout: 10_000 });
    await vi.waitFor(() => expect(r.audio.getState().mic.active).toBe(false), { timeout: 10_000 });
  });
});
