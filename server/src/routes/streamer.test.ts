import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import type { TestbedVideo } from '../drivers/video/testbed';
import type { Logger } from '../log';
import { jpegSize } from '../media/jpeg';
import { DEFAULT_STREAMER_PARAMS, StreamerService } from '../services/streamer';
import { initAndLogin, newApp, tempDataDir } from '../test-helpers';

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
      quality: 80,
    });
    expect(state.streamer.encoder.quality).toBe(80);
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
      url: '/api/streamer/set_params?h264_gop=&video_processing=low_latency_first&quality=55',
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
      quality: 55,
    });
  });

  it('refuses absurd parameters and keeps the old ones', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const before = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result
      .params;
    for (const q of [
      'h264_bitrate=0',
      'h264_bitrate=-5',
      'h264_bitrate=1e9',
      'h264_bitrate=20001',
      'h264_bitrate=99999999999999999999999',
      'h264_bitrate=2000.5',
      'h264_bitrate=Infinity',
      'h264_bitrate=NaN',
      'h264_bitrate=0x7fffffff',
      'h264_bitrate=1&h264_bitrate=2',
      'h264_gop=-1',
      'h264_gop=241',
      'desired_fps=-1',
      'desired_fps=121',
      'desired_fps=1000000',
      'video_processing=__proto__',
      // one bad value spoils the whole request: nothing of it is applied
      'h264_bitrate=3000&desired_fps=121',
    ]) {
      const res = await app.inject({
        method: 'POST',
        url: `/api/streamer/set_params?${q}`,
        headers: { token },
      });
      expect(res.statusCode, q).toBe(400);
      expect(res.json().result.error, q).toBe('ValidatorError');
    }
    const after = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result
      .params;
    expect(after).toEqual(before);
  });

  it("desired_fps is kvmd's 0..120 (0: the most the source gives), resolution is refused as kvmd does", async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const post = (q: string) =>
      app.inject({ method: 'POST', url: `/api/streamer/set_params?${q}`, headers: { token } });
    const params = async () =>
      (await app.inject({ url: '/api/streamer', headers: { token } })).json().result.params;
    const hubFps = () => (app.ctx.video as unknown as { params: { fps: number } }).params.fps;

    let res = await post('desired_fps=0');
    expect(res.statusCode).toBe(200);
    expect((await params()).desired_fps).toBe(0);
    // ustreamer's 0 is "as fast as the source gives": the encoder runs at the limit
    expect(hubFps()).toBe(60);
    const state = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result;
    expect(state.limits.desired_fps).toEqual({ min: 0, max: 60 });
    expect(state.streamer.source.desired_fps).toBe(0);

    // kvmd takes up to 120; the limits bound what runs
    res = await post('desired_fps=120');
    expect(res.statusCode).toBe(200);
    expect((await params()).desired_fps).toBe(60);
    res = await post('desired_fps=25');
    expect(res.statusCode).toBe(200);
    expect((await params()).desired_fps).toBe(25);
    expect(hubFps()).toBe(25);

    // the picture size is the remote computer's: any resolution is kvmd's 400, nothing applied
    for (const q of [
      'resolution=1280x720',
      'resolution=1920x1080&desired_fps=30',
      'resolution=x',
    ]) {
      res = await post(q);
      expect(res.statusCode, q).toBe(400);
      expect(res.json().result, q).toEqual({
        error: 'StreamerResolutionNotSupported',
        error_msg: 'This streamer does not support resolution settings',
      });
    }
    expect((await params()).desired_fps).toBe(25);
    // kvmd counts only non-empty values
    expect((await post('resolution=')).statusCode).toBe(200);
  });

  it('frame rates are whole numbers in the state and the streamer event, as ustreamer sends them', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const hub = app.ctx.video;
    const real = hub.getStats.bind(hub);
    hub.getStats = () => ({ ...real(), capturedFps: 0.8, fps: 0.9 });
    try {
      const st = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result
        .streamer;
      expect(st.source.captured_fps).toBe(1);
      expect(st.h264.fps).toBe(1);
      hub.getStats = () => ({ ...real(), capturedFps: 29.4, fps: 0.4 });
      const events: Array<{
        event: { streamer: { source: { captured_fps: number }; h264: { fps: number } } };
      }> = [];
      const off = app.ctx.streamer.provider().subscribe((e) => events.push(e as never));
      hub.emit('stats', hub.getStats());
      off();
      const last = events.at(-1)!.event.streamer;
      expect(last.source.captured_fps).toBe(29);
      expect(last.h264.fps).toBe(0);
      for (const v of [last.source.captured_fps, last.h264.fps])
        expect(Number.isInteger(v)).toBe(true);
      const [snap] = app.ctx.streamer.provider().snapshot() as typeof events;
      expect(snap!.event.streamer.source.captured_fps).toBe(29);
    } finally {
      hub.getStats = real;
    }
  });

  it('exports drop counters per reason in the state and the streamer event', async () => {
    app = await newApp(undefined, { testbed: { width: 320, height: 240 } });
    const token = await initAndLogin(app);
    const drops = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result
      .streamer.drops;
    expect(drops).toEqual({
      source_busy: 0,
      encoder_offline: 0,
      encoder_restart: 0,
      gop_cache_overflow: 0,
      viewer_lagging: 0,
    });
    app.ctx.video.reportDrop('viewer_lagging', 3);
    const state = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result;
    expect(state.streamer.drops.viewer_lagging).toBe(3);
    // kvmd's fields stay as they were
    expect(Object.keys(state.streamer).sort()).toEqual(
      ['drops', 'encoder', 'h264', 'hdmi', 'instance_id', 'sinks', 'source', 'stream'].sort(),
    );
    const [event] = app.ctx.streamer.provider().snapshot() as Array<{
      event: { streamer: { drops: Record<string, number> } };
    }>;
    expect(event?.event.streamer.drops.viewer_lagging).toBe(3);
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
    // ustreamer's meaning (kvmd 4.197): stream.clients counts MJPEG clients; H.264 is a sink
    expect(state.sinks.h264.has_clients).toBe(true);
    expect(state.stream.clients).toBe(0);
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

class RecordingLog implements Logger {
  lines: Array<{ level: string; msg: string; obj: Record<string, unknown> }> = [];
  private add(level: string, obj: object, msg = ''): void {
    this.lines.push({ level, msg, obj: obj as Record<string, unknown> });
  }
  info(obj: object, msg?: string): void {
    this.add('info', obj, msg);
  }
  warn(obj: object, msg?: string): void {
    this.add('warn', obj, msg);
  }
  error(obj: object, msg?: string): void {
    this.add('error', obj, msg);
  }
  debug(obj: object, msg?: string): void {
    this.add('debug', obj, msg);
  }
}

describe('streamer.json', () => {
  it('missing: defaults, nothing logged', async () => {
    const log = new RecordingLog();
    const { params } = await StreamerService.loadParams(await tempDataDir(), log);
    expect(params).toEqual(DEFAULT_STREAMER_PARAMS);
    expect(log.lines).toEqual([]);
  });

  it('saved values come back', async () => {
    const dir = await tempDataDir();
    const first = await StreamerService.loadParams(dir);
    const saved = { ...DEFAULT_STREAMER_PARAMS, h264_bitrate: 8000, h264_gop: 0 };
    await first.file.save(saved);
    const log = new RecordingLog();
    expect((await StreamerService.loadParams(dir, log)).params).toEqual(saved);
    expect(log.lines).toEqual([]);
  });

  for (const [what, text] of [
    ['not JSON', '{"h264_bitrate": 20'],
    ['JSON but not an object', '[1, 2, 3]'],
    ['null', 'null'],
  ] as const) {
    it(`corrupt (${what}): defaults, a warning, the bad file kept aside`, async () => {
      const dir = await tempDataDir();
      const path = join(dir, 'streamer.json');
      await writeFile(path, text);
      const log = new RecordingLog();
      const { params } = await StreamerService.loadParams(dir, log);
      expect(params).toEqual(DEFAULT_STREAMER_PARAMS);
      expect(log.lines).toMatchObject([
        { level: 'warn', msg: expect.stringMatching(/corrupt/), obj: { keptAs: `${path}.bad` } },
      ]);
      expect(await readFile(`${path}.bad`, 'utf8')).toBe(text);
      await expect(readFile(path)).rejects.toMatchObject({ code: 'ENOENT' });
    });
  }

  it('values out of bounds: those keys default, with a warning naming them', async () => {
    const dir = await tempDataDir();
    await writeFile(
      join(dir, 'streamer.json'),
      JSON.stringify({ h264_bitrate: 1e9, h264_gop: 60, desired_fps: 'fast' }),
    );
    const log = new RecordingLog();
    const { params } = await StreamerService.loadParams(dir, log);
    expect(params).toEqual({ ...DEFAULT_STREAMER_PARAMS, h264_gop: 60 });
    expect(log.lines).toMatchObject([
      { level: 'warn', obj: { keys: ['h264_bitrate', 'desired_fps'] } },
    ]);
  });

  it('unreadable (EISDIR here; EACCES, EIO alike): defaults and an error in the log', async () => {
    const dir = await tempDataDir();
    await mkdir(join(dir, 'streamer.json'));
    const log = new RecordingLog();
    const { params } = await StreamerService.loadParams(dir, log);
    expect(params).toEqual(DEFAULT_STREAMER_PARAMS);
    expect(log.lines).toMatchObject([
      {
        level: 'error',
        obj: { err: { code: 'EISDIR' } },
        msg: expect.stringMatching(/cannot be read/),
      },
    ]);
  });

  it.skipIf(process.getuid?.() === 0)('unreadable (EACCES): defaults and an error', async () => {
    const dir = await tempDataDir();
    const path = join(dir, 'streamer.json');
    await writeFile(path, JSON.stringify(DEFAULT_STREAMER_PARAMS), { mode: 0o000 });
    const log = new RecordingLog();
    expect((await StreamerService.loadParams(dir, log)).params).toEqual(DEFAULT_STREAMER_PARAMS);
    expect(log.lines).toMatchObject([{ level: 'error', obj: { err: { code: 'EACCES' } } }]);
  });

  it('a server with a corrupt streamer.json starts and answers defaults', async () => {
    const dir = await tempDataDir();
    await writeFile(join(dir, 'streamer.json'), '\u0000garbage');
    app = await newApp(dir);
    const token = await initAndLogin(app);
    const state = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result;
    expect(state.params).toEqual(DEFAULT_STREAMER_PARAMS);
    expect(await readFile(join(dir, 'streamer.json.bad'), 'utf8')).toBe('\u0000garbage');
  });
});

describe("kvmd's snapshot, reset and 4.197 state", () => {
  it('answers a JPEG of the screen with ustreamer headers; preview; save, load, delete', async () => {
    app = await newApp(undefined, { testbed: { width: 320, height: 240 } });
    const token = await initAndLogin(app);
    // pikvm-lib / MCP servers: a plain GET; the UI's screenshot: allow_offline=1
    let res = await app.inject({ url: '/api/streamer/snapshot', headers: { token } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/jpeg');
    expect(res.headers['x-ustreamer-online']).toBe('true');
    expect(res.headers['x-ustreamer-width']).toBe('320');
    expect(res.headers['cache-control']).toContain('no-store');
    expect(jpegSize(res.rawPayload)).toEqual({ width: 320, height: 240 });
    expect(app.ctx.video.encoderPid).toBeNull(); // no H.264 for a snapshot

    // Home Assistant's camera: preview with a box
    res = await app.inject({
      url: '/api/streamer/snapshot?preview=1&preview_max_width=160&preview_max_height=160&preview_quality=60',
      headers: { token },
    });
    expect(res.statusCode).toBe(200);
    expect(jpegSize(res.rawPayload)).toEqual({ width: 160, height: 120 });
    res = await app.inject({ url: '/api/streamer/snapshot?preview=1', headers: { token } });
    expect(jpegSize(res.rawPayload)).toEqual({ width: 64, height: 48 });
    res = await app.inject({
      url: '/api/streamer/snapshot?preview=1&preview_quality=999',
      headers: { token },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error_msg).toContain("'preview_quality'");

    res = await app.inject({ url: '/api/streamer/snapshot?load=1', headers: { token } });
    expect(res.statusCode).toBe(503);
    expect(res.json().result.error).toBe('UnavailableError');
    res = await app.inject({ url: '/api/streamer/snapshot?save=1', headers: { token } });
    expect(res.statusCode).toBe(200);
    let state = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result;
    expect(state.snapshot.saved).toEqual({ online: true, width: 320, height: 240 });
    res = await app.inject({ url: '/api/streamer/snapshot?load=1', headers: { token } });
    expect(res.statusCode).toBe(200);
    expect(jpegSize(res.rawPayload)).toEqual({ width: 320, height: 240 });
    res = await app.inject({ method: 'DELETE', url: '/api/streamer/snapshot', headers: { token } });
    expect(res.json()).toEqual({ ok: true, result: {} });
    state = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result;
    expect(state.snapshot.saved).toBeNull();
    expect((await app.inject('/api/streamer/snapshot')).statusCode).toBe(401);
  });

  it('offline: 503 UnavailableError, or the placeholder with allow_offline', async () => {
    app = await newApp(undefined, { testbed: { width: 320, height: 240 } });
    const token = await initAndLogin(app);
    (app.ctx.drivers.video as TestbedVideo).setSignal(false);
    let res = await app.inject({ url: '/api/streamer/snapshot', headers: { token } });
    expect(res.statusCode).toBe(503);
    expect(res.json().result.error).toBe('UnavailableError');
    res = await app.inject({ url: '/api/streamer/snapshot?allow_offline=1', headers: { token } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-ustreamer-online']).toBe('false');
    expect(jpegSize(res.rawPayload)).toEqual({ width: 320, height: 240 });
  });

  it('reset answers {} to an aiohttp body-less POST; the state has the 4.197 fields', async () => {
    app = await newApp(undefined, { testbed: { width: 320, height: 240 } });
    const token = await initAndLogin(app);
    const res = await app.inject({
      method: 'POST',
      url: '/api/streamer/reset',
      headers: { token, 'content-type': 'application/octet-stream', 'content-length': '0' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, result: {} });
    const state = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result;
    expect(state.applied).toEqual(state.params);
    expect(state.streamer.instance_id).toBe('');
    expect(state.streamer.sinks).toEqual({
      jpeg: { has_clients: false },
      h264: { has_clients: false },
    });
    expect(state.streamer.stream).toEqual({ clients: 0, clients_stat: {}, queued_fps: 0 });
  });
});

describe("kvmd's snapshot with OCR", () => {
  it('answers the text as text/plain with the snapshot headers; bad OCR arguments are 400', async () => {
    app = await newApp(undefined, { testbed: { width: 320, height: 240 } });
    const token = await initAndLogin(app);
    let res = await app.inject({
      url: '/api/streamer/snapshot?ocr=1&ocr_langs=eng&ocr_left=0&ocr_top=0&ocr_right=320&ocr_bottom=240',
      headers: { token },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.headers['x-ustreamer-width']).toBe('320');
    expect(typeof res.body).toBe('string');
    res = await app.inject({
      url: '/api/streamer/snapshot?ocr=1&ocr_left=abc',
      headers: { token },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error_msg).toContain('ocr_left');
  }, 30_000);
});
