import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeWebSocket } from '../test/fake-websocket';
import {
  DirectWorkerClient,
  H264DirectStream,
  H264_DIRECT_TRANSITIONS,
  MEDIA_RECONNECT_MS,
  h264Codec,
  mediaSocketUrl,
  parseMediaFrame,
  type CanvasLike,
  type DirectCounters,
  type DirectWorkerLike,
  type EncodedChunkInit,
  type TransferableCanvasLike,
  type VideoDecoderLike,
  type VideoFrameLike,
} from './h264-direct';
import {
  hostDirectPipelines,
  type FromWorker,
  type ToWorker,
  type WorkerScopeLike,
} from './h264-direct-worker-host';
import type { StreamState } from './stream-types';
import { IllegalTransitionError } from '@kvm/protocol/transitions';

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

function setup(options: { supported?: () => boolean } = {}) {
  FakeWebSocket.reset();
  FakeDecoder.instances = [];
  let frameCallback: (() => void) | null = null;
  const stream = new H264DirectStream({
    url: () => 'ws://device.test/api/media/ws',
    createSocket: (url) => new FakeWebSocket(url),
    createDecoder: (output, error) => new FakeDecoder(output, error),
    isSupported: options.supported ?? (() => true),
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
    const { stream } = setup({ supported: () => false });
    const fatal = vi.fn();
    stream.on('fatal', fatal);
    stream.start();
    expect(fatal).toHaveBeenCalledWith('unsupported');
    expect(FakeWebSocket.instances).toHaveLength(0);
    expect(stream.getState()).toBe('error');
  });
});

/** received = presented + dropped + what is still in the decoder or waiting to be drawn. */
function expectBalanced(c: DirectCounters, inFlight: number): void {
  expect(c.received).toBe(c.presented + c.dropped + inFlight);
  expect(c.dropped).toBe(Object.values(c.droppedBy).reduce((a, b) => a + b, 0));
}

describe('H264DirectStream counters', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('counts every frame received as presented or dropped, with the reason', () => {
    const { stream, animate } = setup();
    const canvas = new FakeCanvas();
    stream.start();
    const socket = FakeWebSocket.last();
    socket.open();
    socket.receive(videoMessage(true)); // before the hello: no codec yet
    expect(stream.getState()).toBe('connecting');
    hello(socket);
    socket.receive(videoMessage(false)); // before a key frame
    socket.receive(videoMessage(true));
    socket.receive(videoMessage(false));
    socket.receive(videoMessage(false));
    const decoder = FakeDecoder.instances[0]!;
    decoder.output(new FakeFrame()); // no canvas yet: replaced by the next one, never shown
    decoder.output(new FakeFrame());
    stream.attachCanvas(canvas);
    animate(); // drawn
    decoder.output(new FakeFrame()); // waits for the next animation frame
    expect(stream.counters()).toMatchObject({
      received: 5,
      decoded: 3,
      presented: 1,
      dropped: 3,
      droppedBy: { before_start: 1, before_key: 1, not_shown: 1, overtaken: 0, decoder: 0 },
    });
    expectBalanced(stream.counters(), 1);
    socket.receive(videoMessage(false));
    decoder.output(new FakeFrame()); // overtakes the waiting one
    expect(stream.counters().droppedBy.overtaken).toBe(1);
    socket.receive(videoMessage(false)); // still in the decoder when the socket goes
    socket.serverClose();
    const c = stream.counters();
    expect(c.droppedBy).toMatchObject({ decoder: 1, not_shown: 2 });
    expectBalanced(c, 0);
    expect(stream.framesDrawn).toBe(1);
    expect(stream.framesDecoded).toBe(4);
  });

  it('counts what a decoder reset throws away (too far behind)', () => {
    const { stream } = setup();
    stream.start();
    const socket = FakeWebSocket.last();
    hello(socket);
    socket.receive(videoMessage(true));
    for (let i = 0; i < 31; i += 1) socket.receive(videoMessage(false));
    const decoder = FakeDecoder.instances[0]!;
    decoder.decodeQueueSize = 31;
    socket.receive(videoMessage(false)); // reset; a delta cannot restart
    expect(stream.counters().droppedBy).toMatchObject({ decoder: 32, before_key: 1 });
    expectBalanced(stream.counters(), 0);
  });

  it('adds up the counters of every start', async () => {
    const { stream, animate } = setup();
    stream.attachCanvas(new FakeCanvas());
    for (let run = 0; run < 2; run += 1) {
      stream.start();
      const socket = FakeWebSocket.last();
      hello(socket);
      socket.receive(videoMessage(true));
      FakeDecoder.instances.at(-1)?.output(new FakeFrame());
      animate();
      stream.stop();
    }
    expect(stream.counters()).toMatchObject({ received: 2, decoded: 2, presented: 2, dropped: 0 });
    await expect(stream.readCounters()).resolves.toMatchObject({ presented: 2 });
  });
});

describe('H264DirectStream state transitions', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('makes every move of H264_DIRECT_TRANSITIONS and no other', async () => {
    let supported = false;
    const { stream } = setup({ supported: () => supported });
    const made = new Set<string>();
    let from = stream.getState();
    stream.on('state', (to) => {
      made.add(`${from}->${to}`);
      from = to;
    });
    stream.start(); // idle -> error (no WebCodecs)
    supported = true;
    stream.start(); // error -> connecting
    stream.stop(); // connecting -> stopped
    stream.start(); // stopped -> connecting
    hello(FakeWebSocket.last()); // connecting -> watching
    stream.stop(); // watching -> stopped
    stream.start();
    FakeWebSocket.last().serverClose(); // connecting -> error
    stream.stop(); // error -> stopped
    supported = false;
    stream.start(); // stopped -> error
    supported = true;
    stream.start();
    hello(FakeWebSocket.last());
    FakeWebSocket.last().serverClose(); // watching -> error
    await vi.advanceTimersByTimeAsync(MEDIA_RECONNECT_MS); // error -> connecting
    hello(FakeWebSocket.last());
    FakeWebSocket.last().receive(videoMessage(true));
    FakeDecoder.instances.at(-1)?.output(new FakeFrame()); // watching -> active
    FakeWebSocket.last().serverClose(); // active -> error
    await vi.advanceTimersByTimeAsync(MEDIA_RECONNECT_MS);
    hello(FakeWebSocket.last());
    FakeWebSocket.last().receive(videoMessage(true));
    FakeDecoder.instances.at(-1)?.output(new FakeFrame());
    stream.stop(); // active -> stopped

    const fresh = setup().stream;
    let freshFrom = fresh.getState();
    fresh.on('state', (to) => {
      made.add(`${freshFrom}->${to}`);
      freshFrom = to;
    });
    fresh.stop(); // idle -> stopped
    const another = setup().stream;
    another.on('state', (to) => made.add(`idle->${to}`));
    another.start(); // idle -> connecting
    another.start(); // connecting: nothing

    const allowed = Object.entries(H264_DIRECT_TRANSITIONS).flatMap(([f, tos]) =>
      tos.map((to) => `${f}->${to}`),
    );
    expect([...made].sort()).toEqual(allowed.sort());
  });

  it('throws on an illegal move and stays where it was', () => {
    const { stream } = setup();
    stream.start();
    hello(FakeWebSocket.last());
    const internal = stream as unknown as { setState(state: StreamState): void };
    expect(() => internal.setState('idle')).toThrow(IllegalTransitionError);
    expect(() => internal.setState('attached')).toThrow(IllegalTransitionError);
    expect(stream.getState()).toBe('watching');
  });

  it('ignores a second hello and what a dropped socket still says', () => {
    const { stream } = setup();
    stream.start();
    const first = FakeWebSocket.last();
    const onmessage = first.onmessage;
    hello(first);
    first.receive(videoMessage(true));
    FakeDecoder.instances[0]?.output(new FakeFrame());
    hello(first); // active stays active
    expect(stream.getState()).toBe('active');
    stream.stop();
    onmessage?.({ data: videoMessage(true) } as MessageEvent); // an engine that fires anyway
    expect(stream.getState()).toBe('stopped');
  });
});

/** A Worker whose other side is the real host, in this thread; messages are delivered later. */
class FakeWorker implements DirectWorkerLike {
  readonly toWorker: ToWorker[] = [];
  readonly transferred: unknown[] = [];
  private readonly pageListeners: Array<(event: { data: FromWorker }) => void> = [];
  private readonly workerListeners: Array<(event: { data: ToWorker }) => void> = [];

  constructor(frameCallbacks: Array<() => void>) {
    const scope: WorkerScopeLike = {
      postMessage: (message) =>
        queueMicrotask(() => this.pageListeners.forEach((l) => l({ data: message }))),
      addEventListener: (_type, listener) => this.workerListeners.push(listener),
    };
    hostDirectPipelines(scope, {
      createSocket: (url) => new FakeWebSocket(url),
      createDecoder: (output, error) => new FakeDecoder(output, error),
      now: () => Date.now(),
      requestFrame: (cb) => frameCallbacks.push(cb),
      cancelFrame: () => undefined,
    });
  }

  postMessage(message: ToWorker, transfer?: Transferable[]): void {
    this.toWorker.push(message);
    if (transfer) this.transferred.push(...transfer);
    queueMicrotask(() => this.workerListeners.forEach((l) => l({ data: message })));
  }

  private readonly errorListeners: Array<() => void> = [];

  addEventListener(type: 'message' | 'error', listener: (event: { data: FromWorker }) => void) {
    if (type === 'error') this.errorListeners.push(() => listener({} as { data: FromWorker }));
    else this.pageListeners.push(listener);
  }

  /** The script did not load (a 404, a CSP without worker-src). */
  fail(): void {
    this.errorListeners.forEach((l) => l());
  }
}

class FakeCanvasElement implements TransferableCanvasLike, CanvasLike {
  isConnected = true;
  width = 300;
  height = 150;
  readonly offscreen = new FakeCanvas();
  transfers = 0;
  transferControlToOffscreen(): FakeCanvas {
    this.transfers += 1;
    if (this.transfers > 1) throw new Error('InvalidStateError: already transferred');
    return this.offscreen;
  }
  getContext(): null {
    throw new Error('a transferred canvas is drawn in the worker');
  }
}

describe('H264DirectStream in a worker', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    FakeWebSocket.reset();
    FakeDecoder.instances = [];
  });
  afterEach(() => vi.useRealTimers());

  function workerSetup() {
    const frameCallbacks: Array<() => void> = [];
    const worker = new FakeWorker(frameCallbacks);
    // One client per page, as sharedDirectWorker() makes it.
    const client = new DirectWorkerClient(worker);
    const make = () =>
      new H264DirectStream({
        url: () => 'ws://device.test/api/media/ws',
        isSupported: () => true,
        worker: client,
      });
    const animate = () => frameCallbacks.splice(0).forEach((cb) => cb());
    return { worker, make, animate };
  }

  it('runs socket, decoder and canvas in the worker; the page sees states and counters', async () => {
    const { worker, make, animate } = workerSetup();
    const stream = make();
    expect(stream.inWorker).toBe(true);
    const states: StreamState[] = [];
    const sizes: Array<{ width: number; height: number }> = [];
    stream.on('state', (s) => states.push(s));
    stream.on('resize', (s) => sizes.push(s));
    const canvas = new FakeCanvasElement();
    stream.attachCanvas(canvas);
    stream.start();
    expect(stream.getState()).toBe('connecting');
    await vi.waitFor(() => expect(FakeWebSocket.instances).toHaveLength(1));
    const socket = FakeWebSocket.last();
    hello(socket);
    await vi.waitFor(() => expect(stream.getState()).toBe('watching'));
    socket.receive(videoMessage(true));
    FakeDecoder.instances[0]?.output(new FakeFrame(1024, 768));
    await vi.waitFor(() => expect(stream.getState()).toBe('active'));
    animate();
    expect(canvas.offscreen.drawn).toHaveLength(1);
    expect(canvas.offscreen.width).toBe(1024);
    expect(worker.transferred).toEqual([canvas.offscreen]);
    expect(sizes).toEqual([{ width: 1024, height: 768 }]);
    await expect(stream.readCounters()).resolves.toMatchObject({
      received: 1,
      decoded: 1,
      presented: 1,
      dropped: 0,
    });
    expect(stream.framesDrawn).toBe(1);
    expect(states).toEqual(['connecting', 'watching', 'active']);

    // Key frame requests go to the worker's socket.
    stream.requestKeyFrame();
    await vi.waitFor(() => expect(binarySent(socket)).toEqual([[0x01]]));

    // The socket goes: error, and a new one after 1 s.
    socket.serverClose();
    await vi.waitFor(() => expect(stream.getState()).toBe('error'));
    await vi.advanceTimersByTimeAsync(MEDIA_RECONNECT_MS);
    await vi.waitFor(() => expect(FakeWebSocket.instances).toHaveLength(2));
    stream.stop();
    await vi.waitFor(() => expect(FakeWebSocket.instances[1]?.closed).toBe(true));
    expect(stream.getState()).toBe('stopped');
  });

  it('gives up with "unsupported" when the worker cannot run', () => {
    const { worker, make } = workerSetup();
    const stream = make();
    const fatal = vi.fn();
    stream.on('fatal', fatal);
    stream.start();
    worker.fail();
    expect(fatal).toHaveBeenCalledWith('unsupported');
    expect(stream.getState()).toBe('error');
    // A later stream on the same worker says so at once.
    const next = make();
    next.on('fatal', fatal);
    next.start();
    expect(fatal).toHaveBeenCalledTimes(2);
    expect(next.getState()).toBe('error');
  });

  it('hands a <canvas> to the worker once and keeps it for the next stream', async () => {
    const { worker, make, animate } = workerSetup();
    const canvas = new FakeCanvasElement();
    const first = make();
    first.attachCanvas(canvas);
    first.start();
    first.attachCanvas(null);
    first.stop();

    const second = make();
    second.attachCanvas(canvas);
    second.start();
    await vi.waitFor(() => expect(FakeWebSocket.instances).toHaveLength(2));
    const socket = FakeWebSocket.last();
    hello(socket);
    socket.receive(videoMessage(true));
    await vi.waitFor(() => expect(FakeDecoder.instances).toHaveLength(1));
    FakeDecoder.instances[0]?.output(new FakeFrame());
    animate();
    expect(canvas.transfers).toBe(1);
    expect(canvas.offscreen.drawn).toHaveLength(1);
    await vi.waitFor(() => expect(second.framesDrawn).toBe(1));

    // The <canvas> leaves the page: the worker forgets it when the next one comes.
    canvas.isConnected = false;
    second.attachCanvas(null);
    const next = new FakeCanvasElement();
    second.attachCanvas(next);
    expect(worker.toWorker).toContainEqual({ op: 'release', canvasId: 1 });
    expect(next.transfers).toBe(1);
    second.stop();
  });
});
