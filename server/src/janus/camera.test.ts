/**
 * The browser's camera through the Janus gateway (issue 24): `watch` with `camera: true` adds a
 * recvonly VP8 section (mid `c`) where the webcam can take it; werift plays the browser and
 * sends VP8 RTP on it, which reaches the camera input with the viewer's key; the viewer's
 * teardown says it is gone.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import fastifyWebsocket from '@fastify/websocket';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MediaStreamTrack, RTCPeerConnection, RTCRtpCodecParameters } from 'werift';
import { SILENT_LOGGER } from '../log';
import { registerJanus } from './gateway';
import { FakeFeed, JanusTestClient } from './test-support';

const PLUGIN = 'janus.plugin.ustreamer';

class FakeCamera {
  ok = true;
  opened: string[] = [];
  gone: string[] = [];
  packets: Array<[string, Buffer]> = [];
  keyFrames: Array<() => void> = [];
  available(): boolean {
    return this.ok;
  }
  open(sender: string, keyFrame: () => void): void {
    this.opened.push(sender);
    this.keyFrames.push(keyFrame);
  }
  rtp(sender: string, packet: Buffer): void {
    this.packets.push([sender, packet]);
  }
  gone_(sender: string): void {
    this.gone.push(sender);
  }
}

const apps: FastifyInstance[] = [];
const clients: JanusTestClient[] = [];
const browsers: RTCPeerConnection[] = [];
afterEach(async () => {
  for (const pc of browsers.splice(0)) await pc.close();
  for (const c of clients.splice(0)) await c.close();
  for (const a of apps.splice(0)) await a.close();
});

async function rig(camera: FakeCamera) {
  const app = Fastify();
  await app.register(fastifyWebsocket);
  registerJanus(app, {
    feed: new FakeFeed(),
    iceServers: () => [],
    features: () => ({ audio: false, mic: false }),
    onInput: () => undefined,
    onViewerGone: () => undefined,
    log: SILENT_LOGGER,
    camera: {
      available: () => camera.available(),
      open: (s, k) => camera.open(s, k),
      rtp: (s, p) => camera.rtp(s, p),
      gone: (s) => camera.gone_(s),
    },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  apps.push(app);
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const c = await JanusTestClient.connect(`ws://127.0.0.1:${port}/janus/ws`);
  clients.push(c);
  const ids = await c.attach(PLUGIN, 'oid-camera');
  const send = (body: object, jsep?: object) =>
    c.request({
      janus: 'message',
      session_id: ids.session,
      handle_id: ids.handle,
      body,
      ...(jsep ? { jsep } : {}),
    });
  return { c, send };
}

describe('janus gateway: the browser camera', () => {
  it('offers the camera section only when asked and the webcam can take it', async () => {
    const cam = new FakeCamera();
    const { c, send } = await rig(cam);
    await send({ request: 'watch', params: { video: true, camera: false } });
    expect(await c.startedOffer()).not.toContain('a=mid:c');
    cam.ok = false;
    await send({ request: 'watch', params: { video: true, camera: true } });
    expect(await c.startedOffer()).not.toContain('a=mid:c');
    cam.ok = true;
    await send({ request: 'watch', params: { video: true, camera: true } });
    const offer = await c.startedOffer();
    const section = offer.slice(offer.indexOf('a=mid:c') - 400);
    expect(offer).toContain('a=mid:c');
    expect(offer).toMatch(/m=video 9 UDP\/TLS\/RTP\/SAVPF 98\r\n/);
    expect(offer).toContain('a=rtpmap:98 VP8/90000');
    expect(section).toContain('a=recvonly');
  });

  it("the browser's VP8 RTP reaches the camera input with the viewer's key; gone at hangup", async () => {
    const cam = new FakeCamera();
    const { c, send } = await rig(cam);
    await send({ request: 'watch', params: { video: true, camera: true } });
    const offer = await c.startedOffer();
    const pc = new RTCPeerConnection({
      iceServers: [],
      bundlePolicy: 'max-bundle',
      codecs: {
        video: [
          new RTCRtpCodecParameters({ mimeType: 'video/H264', clockRate: 90000 }),
          new RTCRtpCodecParameters({ mimeType: 'video/VP8', clockRate: 90000 }),
        ],
      },
    });
    browsers.push(pc);
    await pc.setRemoteDescription({ type: 'offer', sdp: offer });
    const camT = pc.getTransceivers().find((t) => t.mid === 'c')!;
    camT.setDirection('sendonly');
    const track = new MediaStreamTrack({ kind: 'video' });
    await camT.sender.replaceTrack(track);
    const answer = await pc.createAnswer();
    for (const t of pc.iceTransports) t.connection.stunServer = undefined;
    await pc.setLocalDescription(answer);
    const ready = new Promise<void>((r) => camT.sender.onReady.subscribe(() => r()));
    await send({ request: 'start' }, { type: 'answer', sdp: pc.localDescription!.sdp });
    await ready;
    expect(cam.opened).toHaveLength(1);
    const payload = Buffer.from([0x10, 0x00, 0x9d, 0x01, 0x2a]);
    await vi.waitFor(
      () => {
        camT.sender.sendRtp(rtpPacket(payload));
        expect(cam.packets.length).toBeGreaterThan(0);
      },
      { timeout: 10_000, interval: 100 },
    );
    const [sender, packet] = cam.packets[0]!;
    expect(sender).toBe(cam.opened[0]);
    expect(packet.subarray(-payload.length)).toEqual(payload);
    // a key frame can be asked for once the browser's SSRC is known
    expect(() => cam.keyFrames[0]!()).not.toThrow();
    await send({ request: 'stop' });
    await vi.waitFor(() => expect(cam.gone).toEqual([cam.opened[0]]), { timeout: 5000 });
  });
});

let seq = 1;
function rtpPacket(payload: Buffer): Buffer {
  const h = Buffer.alloc(12);
  h[0] = 0x80;
  h[1] = 0x80 | 98;
  h.writeUInt16BE(seq++, 2);
  h.writeUInt32BE(seq * 3000, 4);
  h.writeUInt32BE(0xcafe, 8);
  return Buffer.concat([h, payload]);
}
