import Fastify, { type FastifyInstance } from 'fastify';
import fastifyWebsocket from '@fastify/websocket';
import { afterEach, describe, expect, it } from 'vitest';
import {
  MAX_CANDIDATES_PER_TRICKLE,
  MAX_OPAQUE_ID_LENGTH,
  MAX_QUEUED_PER_HANDLE,
  MAX_TRANSACTION_LENGTH,
} from './core';
import { janusFeatures, registerJanus, type JanusDeps, type JanusGateway } from './gateway';
import { MAX_SESSIONS_PER_SOCKET } from './session-registry';
import { MAX_PEERS_PER_SOCKET } from './ustreamer-plugin';
import {
  FakeFeed,
  JanusTestClient,
  fakeDeltaUnit,
  fakeKeyUnit,
  pluginData,
  udpHandles,
  waitFor,
  weriftBrowserPeer as browserPeer,
  type JanusMessage,
} from './test-support';

const PLUGIN = 'janus.plugin.ustreamer';
const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

interface Rig {
  app: FastifyInstance;
  gateway: JanusGateway;
  feed: FakeFeed;
  url: string;
  inputs: [string, string][];
  gone: string[];
}

const rigs: Rig[] = [];
const clients: JanusTestClient[] = [];

async function rig(overrides: Partial<JanusDeps> = {}): Promise<Rig> {
  const app = Fastify();
  await app.register(fastifyWebsocket);
  const feed = new FakeFeed();
  const inputs: [string, string][] = [];
  const gone: string[] = [];
  const gateway = registerJanus(app, {
    feed,
    iceServers: () => [],
    features: () => janusFeatures([]),
    onInput: (key, data) => inputs.push([key, data.toString('hex')]),
    onViewerGone: (key) => gone.push(key),
    log: silent,
    ...overrides,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const r = { app, gateway, feed, url: `ws://127.0.0.1:${port}/janus/ws`, inputs, gone };
  rigs.push(r);
  return r;
}

async function client(r: Rig): Promise<JanusTestClient> {
  const c = await JanusTestClient.connect(r.url);
  clients.push(c);
  return c;
}

/** create + attach: the first steps of janus.js. */
function attach(c: JanusTestClient): Promise<{ session: number; handle: number }> {
  return c.attach(PLUGIN, 'oid-test');
}

function message(
  c: JanusTestClient,
  ids: { session: number; handle: number },
  body: Record<string, unknown>,
  jsep?: Record<string, unknown>,
): Promise<JanusMessage> {
  return c.request({
    janus: 'message',
    session_id: ids.session,
    handle_id: ids.handle,
    body,
    ...(jsep ? { jsep } : {}),
  });
}

/** A client that attached and asked to watch, and a browser peer made from the offer. */
async function watching(r: Rig) {
  const c = await client(r);
  const ids = await attach(c);
  await message(c, ids, { request: 'watch', params: {} });
  const browser = await browserPeer(await c.startedOffer());
  return { c, ids, browser };
}

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const r of rigs.splice(0)) await r.app.close();
});

describe('janus gateway: protocol', () => {
  it('accepts the janus-protocol subprotocol', async () => {
    const r = await rig();
    const c = await client(r);
    expect(c.ws.protocol).toBe('janus-protocol');
  });

  it('runs create, attach, features and watch as the captured sequence', async () => {
    const r = await rig({
      features: () => janusFeatures([{ urls: 'stun:stun.example.org:3478' }]),
    });
    const c = await client(r);
    const created = await c.request({ janus: 'create' });
    expect(created).toMatchObject({ janus: 'success', transaction: 't1' });
    const session = (created['data'] as { id: number }).id;
    expect(Number.isSafeInteger(session) && session > 0).toBe(true);

    const attached = await c.request({ janus: 'attach', session_id: session, plugin: PLUGIN });
    expect(attached).toMatchObject({ janus: 'success', session_id: session, transaction: 't2' });
    const handle = (attached['data'] as { id: number }).id;
    const ids = { session, handle };

    const ok = await message(c, ids, { request: 'features' });
    expect(ok).toEqual({
      janus: 'success',
      session_id: session,
      transaction: 't3',
      sender: handle,
      plugindata: { plugin: PLUGIN, data: { ok: true } },
    });
    const features = await c.pluginEvent('features');
    expect(features).toEqual({
      janus: 'event',
      session_id: session,
      sender: handle,
      plugindata: {
        plugin: PLUGIN,
        data: {
          ustreamer: 'event',
          result: {
            status: 'features',
            features: { audio: false, mic: false, ice: { url: 'stun:stun.example.org:3478' } },
          },
        },
      },
    });

    await message(c, ids, {
      request: 'watch',
      params: { orientation: 0, audio: false, video: true, mic: false, camera: false },
    });
    const started = await c.pluginEvent('started');
    expect(started['transaction']).toBeUndefined();
    const jsep = started['jsep'] as { type: string; sdp: string };
    expect(jsep.type).toBe('offer');
    const { sdp } = jsep;
    expect(sdp).toMatch(/^m=video 9 UDP\/TLS\/RTP\/SAVPF 96\r?$/m);
    expect(sdp).toContain('a=rtpmap:96 H264/90000');
    expect(sdp).toContain(
      'a=fmtp:96 profile-level-id=42e01f;packetization-mode=1;level-asymmetry-allowed=1',
    );
    for (const fb of ['nack', 'nack pli', 'ccm fir', 'goog-remb']) {
      expect(sdp).toContain(`a=rtcp-fb:96 ${fb}\r\n`);
    }
    expect(sdp).toContain('a=sendonly');
    expect(sdp).toContain('a=mid:v');
    expect(sdp).toMatch(/^m=application 9 UDP\/DTLS\/SCTP webrtc-datachannel\r?$/m);
    expect(sdp).toContain('a=mid:d');
    expect(sdp).toContain('a=group:BUNDLE v d');
    expect(sdp).not.toMatch(/^m=audio/m);
    // No feed subscription before the answer.
    expect(r.feed.subscribes).toBe(0);
    expect(r.gateway.peerCount).toBe(1);
  });

  it('builds the offer fast with no ICE server (werift would wait 5 s for Google STUN)', async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    const t0 = performance.now();
    await message(c, ids, { request: 'watch', params: {} });
    await c.pluginEvent('started');
    expect(performance.now() - t0).toBeLessThan(2_000);
  });

  it('omits features.ice without a STUN server and sends no video section for video:false', async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    await message(c, ids, { request: 'features' });
    const ev = pluginData(await c.pluginEvent('features'));
    expect(ev).toEqual({
      ustreamer: 'event',
      result: { status: 'features', features: { audio: false, mic: false } },
    });
    await message(c, ids, { request: 'watch', params: { video: false } });
    const sdp = (await c.pluginEvent('started'))['jsep'] as { sdp: string };
    expect(sdp.sdp).not.toMatch(/^m=video/m);
    expect(sdp.sdp).toMatch(/^m=application/m);
  });

  it('answers a wrong plugin with 460', async () => {
    const r = await rig();
    const c = await client(r);
    const created = await c.request({ janus: 'create' });
    const session = (created['data'] as { id: number }).id;
    const reply = await c.request({
      janus: 'attach',
      session_id: session,
      plugin: 'janus.plugin.echotest',
    });
    expect(reply).toEqual({
      janus: 'error',
      session_id: session,
      transaction: 't2',
      error: { code: 460, reason: "No such plugin 'janus.plugin.echotest'" },
    });
  });

  it('acks keepalive and trickle, and reports Janus-level errors', async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    expect(await c.request({ janus: 'keepalive', session_id: ids.session })).toEqual({
      janus: 'ack',
      session_id: ids.session,
      transaction: 't3',
    });
    expect(
      await c.request({
        janus: 'trickle',
        session_id: ids.session,
        handle_id: ids.handle,
        candidate: { completed: true },
      }),
    ).toMatchObject({ janus: 'ack', session_id: ids.session });

    const err = async (msg: Record<string, unknown>): Promise<unknown> =>
      ((await c.request(msg))['error'] as { code: number }).code;
    expect(await err({ janus: 'keepalive', session_id: 12345 })).toBe(458);
    expect(await err({ janus: 'message', session_id: ids.session, handle_id: 9, body: {} })).toBe(
      459,
    );
    expect(await err({ janus: 'frobnicate', session_id: ids.session })).toBe(453);
    expect(await err({ janus: 'message', session_id: ids.session, handle_id: ids.handle })).toBe(
      456,
    );
    expect(
      await err({
        janus: 'message',
        session_id: ids.session,
        handle_id: ids.handle,
        body: { request: 'start' },
        jsep: { type: 'answer', sdp: 'v=0\r\n' },
      }),
    ).toBe(469);

    c.sendRaw('{nope');
    expect((await c.next((m) => m.janus === 'error'))['error']).toMatchObject({ code: 454 });
    c.sendRaw(JSON.stringify({ janus: 'create' }));
    expect((await c.next((m) => m.janus === 'error'))['error']).toEqual({
      code: 456,
      reason: 'Missing mandatory element (transaction)',
    });
    expect(await c.request({ janus: 'ping' })).toMatchObject({ janus: 'pong' });
  });

  it('pushes plugin errors as events after the success', async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    const cases: [Record<string, unknown>, number, string][] = [
      [{}, 400, 'Request missing'],
      [{ request: 5 }, 400, 'Request not a string'],
      [{ request: 'record' }, 405, 'Not implemented'],
    ];
    for (const [body, code, error] of cases) {
      expect((await message(c, ids, body)).janus).toBe('success');
      expect(pluginData(await c.pluginEvent('error'))).toEqual({
        ustreamer: 'event',
        error_code: code,
        error,
      });
    }
    // key_required has no reply event and asks the feed for a key frame.
    await message(c, ids, { request: 'key_required' });
    await waitFor(() => r.feed.keyFrameRequests === 1);
  });

  it('keeps the session while keepalives come, then times it out', async () => {
    const r = await rig({ sessionTimeoutMs: 300 });
    const c = await client(r);
    const ids = await attach(c);
    await message(c, ids, { request: 'watch', params: {} });
    await c.pluginEvent('started');
    for (let i = 0; i < 4; i++) {
      await new Promise((res) => setTimeout(res, 150));
      expect((await c.request({ janus: 'keepalive', session_id: ids.session })).janus).toBe('ack');
    }
    const timeout = await c.next((m) => m.janus === 'timeout', 2_000);
    expect(timeout).toEqual({ janus: 'timeout', session_id: ids.session });
    expect(r.gateway.sessionCount).toBe(0);
    await waitFor(() => r.gateway.peerCount === 0);
    expect(r.gone).toHaveLength(1);
    const after = await c.request({ janus: 'keepalive', session_id: ids.session });
    expect((after['error'] as { code: number }).code).toBe(458);
  });

  it('serves several sessions and handles on one socket; detach and destroy', async () => {
    const r = await rig();
    const c = await client(r);
    const a = await attach(c);
    const b = await attach(c);
    const second = await c.request({ janus: 'attach', session_id: a.session, plugin: PLUGIN });
    const a2 = { session: a.session, handle: (second['data'] as { id: number }).id };
    expect(new Set([a.session, b.session]).size).toBe(2);
    expect(r.gateway.sessionCount).toBe(2);

    await message(c, a2, { request: 'watch', params: {} });
    await c.pluginEvent('started');
    expect(
      await c.request({ janus: 'detach', session_id: a2.session, handle_id: a2.handle }),
    ).toMatchObject({ janus: 'success' });
    expect(await c.next((m) => m.janus === 'detached')).toEqual({
      janus: 'detached',
      session_id: a2.session,
      sender: a2.handle,
    });
    await waitFor(() => r.gateway.peerCount === 0);

    expect(await c.request({ janus: 'destroy', session_id: b.session })).toMatchObject({
      janus: 'success',
      session_id: b.session,
    });
    expect(r.gateway.sessionCount).toBe(1);
  });

  it('tears everything down when the socket closes', async () => {
    const before = udpHandles();
    const r = await rig();
    const c = await client(r);
    for (let i = 0; i < 2; i++) {
      const ids = await attach(c);
      await message(c, ids, { request: 'watch', params: {} });
      await c.pluginEvent('started');
    }
    expect(r.gateway.peerCount).toBe(2);
    expect(udpHandles()).toBeGreaterThan(before);
    await c.close();
    await waitFor(() => r.gateway.sessionCount === 0 && r.gateway.peerCount === 0);
    expect(r.gone).toHaveLength(2);
    await waitFor(() => udpHandles() === before);
  });

  it('replaces the peer on a second watch and hangs up on stop', async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    await message(c, ids, { request: 'watch', params: {} });
    await c.pluginEvent('started');
    await message(c, ids, { request: 'watch', params: {} });
    expect(await c.next((m) => m.janus === 'hangup')).toMatchObject({
      session_id: ids.session,
      sender: ids.handle,
    });
    await c.pluginEvent('started');
    expect(r.gateway.peerCount).toBe(1);
    await message(c, ids, { request: 'stop' });
    await c.pluginEvent('stopped');
    await c.next((m) => m.janus === 'hangup');
    expect(r.gateway.peerCount).toBe(0);
    expect(r.gone).toHaveLength(2);
  });
});

describe('janus gateway: media', () => {
  it('connects a peer, sends the cached GOP from its key frame, and relays input', async () => {
    const r = await rig();
    r.feed.push(fakeDeltaUnit(1)); // before any key frame: never sent
    r.feed.push(fakeKeyUnit(2));
    r.feed.push(fakeDeltaUnit(3));
    const { c, ids, browser } = await watching(r);
    try {
      // Trickle before the answer is applied: queued; .local and TCP are dropped.
      const cand = (address: string, transport = 'udp'): Record<string, unknown> => ({
        candidate: `candidate:1 1 ${transport} 2122260223 ${address} 50000 typ host`,
        sdpMid: 'v',
        sdpMLineIndex: 0,
      });
      await c.request({
        janus: 'trickle',
        session_id: ids.session,
        handle_id: ids.handle,
        candidates: [cand('4f1c3a2e-1111-2222-3333-444455556666.local'), cand('127.0.0.1', 'tcp')],
      });
      await message(c, ids, { request: 'start' }, { type: 'answer', sdp: browser.answer });
      await c.pluginEvent('started');
      expect((await c.next((m) => m.janus === 'webrtcup', 10_000)).sender).toBe(ids.handle);
      expect(r.feed.subscribes).toBe(1);

      r.feed.push(fakeDeltaUnit(4));
      await waitFor(() => browser.rtp.some((p) => p.header.timestamp === 4 * 3000));
      const timestamps = [...new Set(browser.rtp.map((p) => p.header.timestamp))];
      expect(timestamps).toEqual([2 * 3000, 3 * 3000, 4 * 3000]);
      const first = browser.rtp[0]!;
      expect(first.header.payloadType).toBe(96);
      expect(first.payload[0]! & 0x1f).toBe(24); // STAP-A: SPS + PPS
      expect(first.payload.subarray(3, 4).toString('hex')).toBe('67');
      // The 3000-byte IDR went as FU-A: start, end, one marker at the end of the unit.
      const idr = browser.rtp.filter((p) => p.header.timestamp === 2 * 3000);
      expect(idr.slice(1).every((p) => (p.payload[0]! & 0x1f) === 28)).toBe(true);
      expect(idr.map((p) => p.header.marker)).toEqual(idr.map((_, i) => i === idr.length - 1));
      const seqs = browser.rtp.map((p) => p.header.sequenceNumber);
      expect(seqs.every((s, i) => i === 0 || s === ((seqs[i - 1]! + 1) & 0xffff))).toBe(true);

      const channel = await browser.channel;
      expect(channel.label).toBe('hid');
      await waitFor(() => channel.readyState === 'open');
      const pong = new Promise<string>((resolve) =>
        channel.onMessage.subscribe((d) => resolve(Buffer.from(d as Buffer).toString('hex'))),
      );
      channel.send(Buffer.from([0x00]));
      expect(await pong).toBe('ff');
      channel.send(Buffer.from('0300000000', 'hex'));
      channel.send(Buffer.from('09', 'hex')); // unknown op: dropped
      channel.send(Buffer.from('010141', 'hex'));
      await waitFor(() => r.inputs.length === 2);
      expect(r.inputs.map(([, d]) => d)).toEqual(['0300000000', '010141']);
      const key = r.inputs[0]![0];
      expect(key).toMatch(new RegExp(`^janus:${ids.session}:${ids.handle}:\\d+$`));

      await c.request({ janus: 'hangup', session_id: ids.session, handle_id: ids.handle });
      expect(await c.next((m) => m.janus === 'hangup')).toMatchObject({ reason: 'Janus API' });
      await waitFor(() => r.feed.viewers.size === 0 && r.gateway.peerCount === 0);
      expect(r.gone).toEqual([key]);
    } finally {
      await browser.pc.close();
    }
  });

  it('drops deltas until the first key frame and asks for one', async () => {
    const r = await rig();
    const { c, ids, browser } = await watching(r);
    try {
      await message(c, ids, { request: 'start' }, { type: 'answer', sdp: browser.answer });
      await c.next((m) => m.janus === 'webrtcup', 10_000);
      await waitFor(() => r.feed.keyFrameRequests > 0);
      r.feed.push(fakeDeltaUnit(10));
      r.feed.push(fakeKeyUnit(11));
      r.feed.push(fakeDeltaUnit(12));
      await waitFor(() => browser.rtp.some((p) => p.header.timestamp === 12 * 3000));
      expect([...new Set(browser.rtp.map((p) => p.header.timestamp))]).toEqual([33000, 36000]);
    } finally {
      await browser.pc.close();
    }
  });
});

describe('janus gateway: bounds on what one socket may ask', () => {
  it('refuses a transaction longer than MAX_TRANSACTION_LENGTH without echoing it', async () => {
    const r = await rig();
    const c = await client(r);
    const long = 'x'.repeat(MAX_TRANSACTION_LENGTH + 1);
    c.sendRaw(JSON.stringify({ janus: 'ping', transaction: long }));
    const err = await c.next((m) => m.janus === 'error');
    expect(err['error']).toMatchObject({ code: 467 });
    expect(err['transaction']).toBeUndefined();
    // the longest allowed one still works
    c.sendRaw(JSON.stringify({ janus: 'ping', transaction: 'y'.repeat(MAX_TRANSACTION_LENGTH) }));
    expect(await c.next((m) => m.janus === 'pong')).toMatchObject({
      transaction: 'y'.repeat(MAX_TRANSACTION_LENGTH),
    });
  });

  it('refuses a trickle of more than MAX_CANDIDATES_PER_TRICKLE candidates', async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    const candidates = Array.from({ length: MAX_CANDIDATES_PER_TRICKLE + 1 }, (_, i) => ({
      candidate: `candidate:${i} 1 udp 1 10.0.0.${i} 5000 typ host`,
      sdpMid: 'v',
    }));
    const reply = await c.request({
      janus: 'trickle',
      session_id: ids.session,
      handle_id: ids.handle,
      candidates,
    });
    expect(reply).toMatchObject({ janus: 'error', error: { code: 467 } });
    expect(
      await c.request({
        janus: 'trickle',
        session_id: ids.session,
        handle_id: ids.handle,
        candidates: candidates.slice(0, MAX_CANDIDATES_PER_TRICKLE),
      }),
    ).toMatchObject({ janus: 'ack' });
  });

  it('bounds the plugin messages in flight on one handle', async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    // A watch builds a werift peer (real I/O); the features behind it wait in the queue. The
    // frames leave in one write (corked), so the server parses them all in one go.
    const frames = [{ request: 'watch', params: {} }, ...Array(20).fill({ request: 'features' })];
    const socket = (c.ws as unknown as { _socket: { cork(): void; uncork(): void } })._socket;
    socket.cork();
    const pending = frames.map((body) => message(c, ids, body));
    socket.uncork();
    const replies = await Promise.all(pending);
    const accepted = replies.filter((m) => m.janus === 'success').length;
    const refused = replies.filter(
      (m) => m.janus === 'error' && (m['error'] as { code: number }).code === 490,
    ).length;
    expect(accepted).toBe(MAX_QUEUED_PER_HANDLE);
    expect(refused).toBe(frames.length - MAX_QUEUED_PER_HANDLE);
  });

  it('rate-limits watch requests and caps the peers of one socket', async () => {
    const r = await rig();
    const c = await client(r);
    const created = await c.request({ janus: 'create' });
    const session = (created['data'] as { id: number }).id;
    const handles: number[] = [];
    for (let i = 0; i < MAX_PEERS_PER_SOCKET + 1; i += 1) {
      const attached = await c.request({ janus: 'attach', session_id: session, plugin: PLUGIN });
      handles.push((attached['data'] as { id: number }).id);
    }
    const watch = (handle: number): Promise<JanusMessage> =>
      message(c, { session, handle }, { request: 'watch', params: {} });
    for (const handle of handles.slice(0, MAX_PEERS_PER_SOCKET)) {
      expect(await watch(handle)).toMatchObject({ janus: 'success' });
    }
    await waitFor(() => r.gateway.peerCount === MAX_PEERS_PER_SOCKET, 20_000);
    // over the burst: refused until the bucket refills
    const last = handles[MAX_PEERS_PER_SOCKET]!;
    expect(await watch(last)).toMatchObject({ janus: 'error', error: { code: 490 } });
    let reply = await watch(last);
    const deadline = Date.now() + 10_000;
    while (reply.janus === 'error' && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 100));
      reply = await watch(last);
    }
    expect(reply).toMatchObject({ janus: 'success' });
    const refusal = await c.pluginEvent('error');
    expect(pluginData(refusal)).toMatchObject({
      error_code: 503,
      error: 'Too many viewers on this connection',
    });
    expect(r.gateway.peerCount).toBe(MAX_PEERS_PER_SOCKET);
  });
});

describe('janus gateway: sessions and handles of one socket', () => {
  it('refuses an opaque_id longer than MAX_OPAQUE_ID_LENGTH', async () => {
    const r = await rig();
    const c = await client(r);
    const created = await c.request({ janus: 'create' });
    const session = (created['data'] as { id: number }).id;
    const attach = (opaque: string): Promise<JanusMessage> =>
      c.request({ janus: 'attach', session_id: session, plugin: PLUGIN, opaque_id: opaque });
    expect(await attach('o'.repeat(MAX_OPAQUE_ID_LENGTH + 1))).toMatchObject({
      janus: 'error',
      error: { code: 467 },
    });
    expect(await attach('o'.repeat(MAX_OPAQUE_ID_LENGTH))).toMatchObject({ janus: 'success' });
  });

  it('does not let a claim take a socket over MAX_SESSIONS_PER_SOCKET', async () => {
    const r = await rig();
    const a = await client(r);
    const b = await client(r);
    const theirs = ((await a.request({ janus: 'create' }))['data'] as { id: number }).id;
    for (let i = 0; i < MAX_SESSIONS_PER_SOCKET; i += 1) {
      expect(await b.request({ janus: 'create' })).toMatchObject({ janus: 'success' });
    }
    expect(await b.request({ janus: 'create' })).toMatchObject({ janus: 'error' });
    expect(await b.request({ janus: 'claim', session_id: theirs })).toMatchObject({
      janus: 'error',
      error: { code: 490 },
    });
    // a socket with room may claim it
    const c = await client(r);
    expect(await c.request({ janus: 'claim', session_id: theirs })).toMatchObject({
      janus: 'success',
    });
  });
});
