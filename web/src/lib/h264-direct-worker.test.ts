import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeWebSocket } from '../test/fake-websocket';
import {
  DirectWorkerClient,
  H264DirectStream,
  MEDIA_RECONNECT_MS,
  type CanvasLike,
  type DirectWorkerLike,
  type TransferableCanvasLike,
} from './h264-direct';
import {
  hostDirectPipelines,
  type FromWorker,
  type ToWorker,
  type WorkerScopeLike,
} from './h264-direct-worker-host';
import {
  FakeDecoder,
  FakeFrame,
  FakeCanvas,
  videoMessage,
  binarySent,
  hello,
} from './h264-direct-test-kit';
import type { StreamState } from './stream-types';

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
