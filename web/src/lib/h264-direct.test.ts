import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeWebSocket } from '../test/fake-websocket';
import {
  H264DirectStream,
  MEDIA_RECONNECT_MS,
  h264Codec,
  mediaSocketUrl,
  parseMediaFrame,
  type CanvasLike,
  type EncodedChunkInit,
  type VideoDecoderLike,
  type VideoFrameLike,
} from './h264-direct';
import type { StreamState } from './stream-types';

class FakeDecoder implements VideoDecoderLike {
  static instances: FakeDecoder[] = [];
  state: CodecState = 'unconfigured';
  decodeQueueSize = 0;
  readonly configs: Array<{ codec: string; optimizeForLatency: boolean }> = [];
  readonly chunks: EncodedChunkInit[] = [];
  constructor(
    readonly output: (frame: VideoFrameLike) => void,
    readonly error: (e: unknown) => void,
  ) {
    FakeDecoder.instances.push(this);
  }
  configure(config: { codec: string; optimizeForLatency: boolean }): void {
    this.configs.push(config);
    this.state = 'configured';
  }
  decode(chunk: EncodedChunkInit): void {
    this.chunks.push(chunk);
  }
  reset(): void {
    this.state = 'unconfigured';
  }
  close(): void {
    this.state = 'closed';
  }
  /** The decoder fails: WebCodecs closes it and calls error. */
  fail(): void {
    this.state = 'closed';
    this.error(new Error('decode error'));
  }
}

class FakeFrame implements VideoFrameLike {
  closed = false;
  constructor(
    readonly displayWidth = 1280,
    readonly displayHeight = 720,
  ) {}
  close(): void {
    this.closed = true;
  }
}

class FakeCanvas implements CanvasLike {
  width = 300;
  height = 150;
  readonly drawn: unknown[] = [];
  getContext() {
    return {
      drawImage: (image: never) => {
        this.drawn.push(image);
      },
    };
  }
}

function videoMessage(key: boolean, payload: number[] = [0, 0, 0, 1, key ? 0x65 : 0x41]) {
  return new Uint8Array([0x01, key ? 1 : 0, ...payload]).buffer;
}

function setup(options: { supported?: boolean } = {}) {
  FakeWebSocket.reset();
  FakeDecoder.instances = [];
  let frameCallback: (() => void) | null = null;
  const stream = new H264DirectStream({
    url: () => 'ws://device.test/api/media/ws',
    createSocket: (url) => new FakeWebSocket(url),
    createDecoder: (output, error) => new FakeDecoder(output, error),
    isSupported: () => options.supported ?? true,
    now: () => Date.now(),
    requestFrame: (cb) => {
      frameCallback = cb;
      return 1;
    },
    cancelFrame: () => {
      frameCallback = null;
    },
  });
  const states: StreamState[] = [];
  stream.on('state', (s) => states.push(s));
  const animate = () => {
    const cb = frameCallback;
    frameCallback = null;
    cb?.();
  };
  return { stream, states, animate };
}

function binarySent(socket: FakeWebSocket): number[][] {
  return socket.sent.filter((d): d is Uint8Array => d instanceof Uint8Array).map((d) => [...d]);
}

/** Opens the socket and plays the server's media hello. */
function hello(socket: FakeWebSocket, profile = '42c01f') {
  socket.open();
  socket.receiveFrame('media', { video: { h264: { profile_level_id: profile } } });
}

describe('parseMediaFrame', () => {
  it('splits [0x01][key][access unit]', () => {
    const key = parseMediaFrame(new Uint8Array([1, 1, 0, 0, 0, 1, 0x27]));
    expect(key).toEqual({ kind: 'video', key: true, data: new Uint8Array([0, 0, 0, 1, 0x27]) });
    const delta = parseMediaFrame(new Uint8Array([1, 0, 0, 0, 0, 1, 0x21]).buffer);
    expect(delta).toMatchObject({ kind: 'video', key: false });
  });

  it('knows the pong and ignores the rest', () => {
    expect(parseMediaFrame(new Uint8Array([0xff]))).toEqual({ kind: 'pong' });
    expect(parseMediaFrame(new Uint8Array([0xff, 0]))).toBeNull();
    expect(parseMediaFrame(new Uint8Array([0x01, 0x01]))).toBeNull(); // no payload
    expect(parseMediaFrame(new Uint8Array([0x02, 1, 2, 3]))).toBeNull();
    expect(parseMediaFrame(new Uint8Array([]))).toBeNull();
  });

  it('makes the codec string from the profile-level-id', () => {
    expect(h264Codec('42E01F')).toBe('avc1.42e01f');
    expect(h264Codec(undefined)).toBe('avc1.42e01f');
    expect(h264Codec('bogus')).toBe('avc1.42e01f');
    expect(h264Codec('640028')).toBe('avc1.640028');
  });

  it('builds the socket URL with the token', () => {
    expect(mediaSocketUrl({ protocol: 'https:', host: 'kvm' }, 'tok')).toBe(
      'wss://kvm/api/media/ws?auth_token=tok',
    );
  });
});

describe('H264DirectStream', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('answers the media hello with start and decodes from the first key frame', () => {
    const { stream, states } = setup();
    stream.start();
    const socket = FakeWebSocket.last();
    expect(socket.url).toBe('ws://device.test/api/media/ws');
    expect(socket.binaryType).toBe('arraybuffer');
    hello(socket);
    expect(socket.sentFrames()).toEqual([
      { event_type: 'start', event: { type: 'video', format: 'h264' } },
    ]);
    expect(stream.getState()).toBe('watching');

    // A delta frame cannot start a picture: dropped, key frame asked for.
    socket.receive(videoMessage(false));
    expect(FakeDecoder.instances[0]?.configs).toEqual([]);
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
    const { stream } = setup({ supported: false });
    const fatal = vi.fn();
    stream.on('fatal', fatal);
    stream.start();
    expect(fatal).toHaveBeenCalledWith('unsupported');
    expect(FakeWebSocket.instances).toHaveLength(0);
    expect(stream.getState()).toBe('error');
  });
});
