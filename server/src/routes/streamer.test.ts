import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, newApp } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

async function listen(): Promise<number> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  return addr.port;
}

async function until(pred: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('timeout');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('streamer', () => {
  it('answers the state, validates and applies set_params, persists them', async () => {
    app = await newApp(undefined, { testbed: { width: 320, height: 240 } });
    const token = await initAndLogin(app);
    const state = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result;
    expect(state.params).toEqual({
      h264_bitrate: 2000,
      h264_gop: 30,
      desired_fps: 30,
      video_processing: 'quality_first',
    });
    expect(state.streamer.source).toMatchObject({
      online: true,
      resolution: { width: 320, height: 240 },
    });
    expect(state.streamer.hdmi.signal).toBe(true);

    let res = await app.inject({
      method: 'POST',
      url: '/api/streamer/set_params?h264_bitrate=5000&h264_gop=60',
      headers: { token },
    });
    expect(res.statusCode).toBe(200);
    res = await app.inject({
      method: 'POST',
      url: '/api/streamer/set_params?h264_bitrate=99999',
      headers: { token },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error_msg).toContain("'h264_bitrate'");
    res = await app.inject({
      method: 'POST',
      url: '/api/streamer/set_params?video_processing=fast',
      headers: { token },
    });
    expect(res.statusCode).toBe(400);
    res = await app.inject({
      method: 'POST',
      url: '/api/streamer/set_params?h264_gop=&video_processing=low_latency_first',
      headers: { token },
    });
    expect(res.statusCode).toBe(200);
    const params = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result
      .params;
    expect(params).toEqual({
      h264_bitrate: 5000,
      h264_gop: 60,
      desired_fps: 30,
      video_processing: 'low_latency_first',
    });
  });

  it('answers the ICE servers: none when STUN is off', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const turn = (await app.inject({ url: '/api/turn/get_turn', headers: { token } })).json()
      .result;
    expect(turn).toEqual({ username: '', password: '', ttl: 86400, uris: [] });
  });
});

describe('/api/media/ws', () => {
  it('says hello, starts on a key frame with SPS, streams deltas, answers pings', async () => {
    app = await newApp(undefined, { testbed: { width: 320, height: 240 } });
    const token = await initAndLogin(app);
    const port = await listen();
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/media/ws?auth_token=${token}`);
    const texts: unknown[] = [];
    const frames: Buffer[] = [];
    const pongs: Buffer[] = [];
    ws.on('message', (data: Buffer, isBinary) => {
      if (!isBinary) texts.push(JSON.parse(String(data)));
      else if (data.length === 1) pongs.push(data);
      else frames.push(data);
    });
    await until(() => texts.length > 0);
    expect(texts[0]).toEqual({
      event_type: 'media',
      event: { video: { h264: { profile_level_id: expect.stringMatching(/^[0-9a-f]{6}$/) } } },
    });
    ws.send(JSON.stringify({ event_type: 'start', event: { type: 'video', format: 'h264' } }));
    await until(() => frames.length >= 10);
    const first = frames[0]!;
    expect([first[0], first[1]]).toEqual([0x01, 0x01]);
    // Annex B start code, then an SPS (nal type 7)
    expect([...first.subarray(2, 6)]).toEqual([0, 0, 0, 1]);
    expect(first[6]! & 0x1f).toBe(7);
    expect(frames.slice(1).some((f) => f[1] === 0)).toBe(true);
    ws.send(Buffer.from([0x00]));
    await until(() => pongs.length > 0);
    expect([...pongs[0]!]).toEqual([0xff]);
    const state = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result
      .streamer;
    expect(state.stream.clients).toBe(1);
    ws.close();
  });

  it('refuses the socket without a session', async () => {
    app = await newApp();
    await initAndLogin(app);
    const port = await listen();
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/api/media/ws`);
      ws.on('unexpected-response', (_q, r) => resolve(r.statusCode ?? 0));
      ws.on('open', () => resolve(101));
      ws.on('error', () => undefined);
    });
    expect(status).toBe(401);
  });
});
