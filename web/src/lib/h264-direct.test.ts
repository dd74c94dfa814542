import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeWebSocket } from '../test/fake-websocket';
import { MEDIA_RECONNECT_MS } from './h264-direct';
import {
  FakeDecoder,
  FakeFrame,
  FakeCanvas,
  videoMessage,
  setup,
  binarySent,
  hello,
} from './h264-direct-test-kit';

describe('H264DirectStream', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('answers the media hello with start, configures the decoder then, and decodes from the first key frame', () => {
    const { stream, states } = setup();
    stream.start();
    const socket = FakeWebSocket.last();
    expect(socket.url).toBe('ws://device.test/api/media/ws');
    expect(socket.binaryType).toBe('arraybuffer');
    hello(socket);
    expect(socket.sentFrames()).toEqual([
      { event_type: 'start', event: { type: 'video', format: 'h264', capture_time: true } },
    ]);
    expect(stream.getState()).toBe('watching');
    // the decoder starts up while the first key frame is on its way
    expect(FakeDecoder.instances[0]?.configs).toEqual([
      { codec: 'avc1.42c01f', optimizeForLatency: true },
    ]);

    // A delta frame cannot start a picture: dropped, key frame asked for.
    socket.receive(videoMessage(false));
    expect(FakeDecoder.instances[0]?.chunks).toEqual([]);
    expect(binarySent(socket)).toEqual([[0x01]]);

    socket.receive(videoMessage(true));
    socket.receive(videoMessage(false));
    socket.receive(videoMessage(false));
    const decoder = FakeDecoder.instances[0];
    expect(decoder?.configs).toEqual([{ codec: 'avc1.42c01f', optimizeForLatency: true }]);
    expect(decoder?.chunks.map((c) => c.type)).toEqual(['key', 'delta', 'delta']);
    expect([...(decoder?.chunks[0]?.data ?? [])]).toEqual([0, 0, 0, 1, 0x65]);
    // Same clock reading, still strictly increasing timestamps.
    const stamps = decoder?.chunks.map((c) => c.timestamp) ?? [];
    expect(stamps[1]).toBeGreaterThan(stamps[0] ?? Infinity);
    expect(stamps[2]).toBeGreaterThan(stamps[1] ?? Infinity);

    decoder?.output(new FakeFrame());
    expect(stream.getState()).toBe('active');
    expect(stream.getInfo().connection).toBe('direct');
    expect(states).toEqual(['connecting', 'watching', 'active']);
  });

  it('always draws the newest frame and closes the ones it overtook', () => {
    const { stream, animate } = setup();
    const canvas = new FakeCanvas();
    stream.attachCanvas(canvas);
    const sizes: Array<{ width: number; height: number }> = [];
    stream.on('resize', (s) => sizes.push(s));
    stream.start();
    const socket = FakeWebSocket.last();
    hello(socket);
    socket.receive(videoMessage(true));
    const decoder = FakeDecoder.instances[0];
    const a = new FakeFrame();
    const b = new FakeFrame();
    decoder?.output(a);
    decoder?.output(b);
    expect(a.closed).toBe(true); // overtaken, never drawn
    animate();
    expect(canvas.drawn).toEqual([b]);
    expect(b.closed).toBe(true);
    expect(canvas.width).toBe(1280);
    expect(canvas.height).toBe(720);
    expect(stream.framesDrawn).toBe(1);
    expect(stream.framesDecoded).toBe(2);
    animate(); // nothing new
    expect(canvas.drawn).toHaveLength(1);
    expect(sizes).toEqual([{ width: 1280, height: 720 }]);
  });

  it('dates each drawn frame by its capture time and by the start or key request it answers', () => {
    const { stream, animate } = setup();
    stream.attachCanvas(new FakeCanvas());
    const seen: Array<{ capturedAt: number; shownAt: number; liveFrom: number }> = [];
    stream.on('latency', (f) => seen.push(f));
    const epoch = () => performance.timeOrigin + performance.now();
    const timed = (key: boolean, capturedAt: number) => {
      const bytes = new Uint8Array(15);
      bytes.set([0x02, key ? 1 : 0]);
      new DataView(bytes.buffer).setFloat64(2, capturedAt);
      bytes.set([0, 0, 0, 1, key ? 0x65 : 0x41], 10);
      return bytes.buffer;
    };
    stream.start();
    const socket = FakeWebSocket.last();
    const beforeStart = epoch();
    hello(socket);
    const afterStart = epoch();
    /** The decoder's picture of its newest chunk. */
    const picture = (decoder: FakeDecoder | undefined) =>
      Object.assign(new FakeFrame(), { timestamp: decoder?.chunks.at(-1)?.timestamp });
    /** A key frame captured at `at`, decoded by decoder `n` and drawn: the readout's event. */
    const shown = (n: number, at: number) => {
      socket.receive(timed(true, at));
      FakeDecoder.instances[n]?.output(picture(FakeDecoder.instances[n]));
      animate();
      expect(seen.at(-1)?.capturedAt).toBe(at);
    };
    shown(0, 1_000);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.liveFrom).toBeGreaterThanOrEqual(beforeStart);
    expect(seen[0]?.liveFrom).toBeLessThanOrEqual(afterStart);

    // a key request (a delta frame with no picture to build on, after a decoder error) moves it
    vi.advanceTimersByTime(1_000);
    FakeDecoder.instances[0]?.fail();
    const beforeAsk = epoch();
    socket.receive(timed(false, 2_000));
    expect(binarySent(socket).filter(([op]) => op === 0x01)).toHaveLength(1);
    shown(1, 3_000);
    expect(seen).toHaveLength(2);
    expect(seen[1]?.liveFrom).toBeGreaterThanOrEqual(beforeAsk);
    expect(seen[1]?.liveFrom).toBeGreaterThan(seen[0]?.liveFrom ?? Infinity);
  });

  it("says when the attached canvas shows a picture: its first frame, or the old canvas's copied", () => {
    const { stream, animate } = setup();
    const preview = new FakeCanvas();
    const view = new FakeCanvas();
    const painted: unknown[] = [];
    stream.on('painted', (e) => painted.push(e.canvas));
    stream.attachCanvas(preview);
    stream.start();
    const socket = FakeWebSocket.last();
    hello(socket);
    socket.receive(videoMessage(true));
    FakeDecoder.instances[0]?.output(new FakeFrame());
    expect(painted).toEqual([]); // decoded, not drawn yet
    animate(); // drawn
    expect(painted).toEqual([]);
    animate(); // the frame after the drawing
    expect(painted).toEqual([preview]);
    stream.attachCanvas(view); // no new frame: the preview's picture is copied onto the view
    expect(view.drawn).toEqual([preview]);
    expect(painted).toEqual([preview]); // said once the copy can be on the screen
    animate();
    expect(painted).toEqual([preview, view]);
    expect(stream.attachedCanvas).toBe(view);
    expect(stream.framesDrawn).toBe(1); // a copy is not a frame
  });

  it('pings every second and reconnects after 5 missed pongs', async () => {
    const { stream } = setup();
    stream.start();
    const socket = FakeWebSocket.last();
    hello(socket);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(binarySent(socket)).toEqual([[0x00], [0x00], [0x00]]);
    socket.receive(new Uint8Array([0xff]).buffer); // pong: the count starts over
    await vi.advanceTimersByTimeAsync(5_000);
    expect(FakeWebSocket.instances).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_000); // 5 pings unanswered
    expect(socket.closed).toBe(true);
    expect(stream.getState()).toBe('error');
    await vi.advanceTimersByTimeAsync(MEDIA_RECONNECT_MS);
    expect(FakeWebSocket.instances).toHaveLength(2);
  });

  it('reconnects 1 s after the socket closes', async () => {
    const { stream } = setup();
    stream.start();
    const socket = FakeWebSocket.last();
    hello(socket);
    socket.receive(videoMessage(true));
    const decoder = FakeDecoder.instances[0];
    socket.serverClose();
    expect(stream.getState()).toBe('error');
    expect(decoder?.state).toBe('closed');
    await vi.advanceTimersByTimeAsync(MEDIA_RECONNECT_MS - 1);
    expect(FakeWebSocket.instances).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(FakeWebSocket.instances).toHaveLength(2);
    expect(stream.getState()).toBe('connecting');
    // A frame the old decoder still hands out is closed and ignored.
    const late = new FakeFrame();
    decoder?.output(late);
    expect(late.closed).toBe(true);
    expect(stream.getState()).toBe('connecting');
  });

  it('stop closes everything and reconnects nothing', async () => {
    const { stream } = setup();
    stream.start();
    const socket = FakeWebSocket.last();
    hello(socket);
    stream.stop();
    expect(socket.closed).toBe(true);
    expect(stream.getState()).toBe('stopped');
    await vi.advanceTimersByTimeAsync(30_000);
    expect(FakeWebSocket.instances).toHaveLength(1);
  });

  it('starts a new decoder at the next key frame after a decoder error', () => {
    const { stream } = setup();
    stream.start();
    const socket = FakeWebSocket.last();
    hello(socket);
    socket.receive(videoMessage(true));
    FakeDecoder.instances[0]?.fail();
    expect(binarySent(socket)).toEqual([[0x01]]);
    socket.receive(videoMessage(false)); // no decoder for deltas until a key frame
    expect(FakeDecoder.instances[1]?.configs ?? []).toEqual([]);
    socket.receive(videoMessage(true));
    expect(FakeDecoder.instances.at(-1)?.configs).toHaveLength(1);
    expect(FakeDecoder.instances.at(-1)?.chunks.map((c) => c.type)).toEqual(['key']);
  });

  it('reports bitrate and fps every second', async () => {
    const { stream } = setup();
    stream.start();
    const socket = FakeWebSocket.last();
    hello(socket);
    const payload = new Array<number>(1248).fill(0); // 1250 bytes per message with the header
    for (let i = 0; i < 25; i += 1) {
      socket.receive(videoMessage(i === 0, payload));
      FakeDecoder.instances[0]?.output(new FakeFrame());
    }
    socket.receive(new Uint8Array([0xff]).buffer);
    await vi.advanceTimersByTimeAsync(1_000);
    // 25 × 1250 bytes = 250 kbit in one second.
    expect(stream.getInfo()).toEqual({ bitrateKbps: 250, fps: 25, connection: 'direct' });
  });

  it('says so when WebCodecs is missing (no secure context)', () => {
    const { stream } = setup({ supported: () => false });
    const fatal = vi.fn();
    stream.on('fatal', fatal);
    stream.start();
    expect(fatal).toHaveBeenCalledWith('unsupported');
    expect(FakeWebSocket.instances).toHaveLength(0);
    expect(stream.getState()).toBe('error');
  });
});
