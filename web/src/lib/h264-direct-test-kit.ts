/**
 * The fakes direct H.264's tests share: the WebCodecs decoder, frames, a canvas, a stream on a
 * fake socket with a hand-driven animation frame, and the server's side of the wire.
 * Test code only (h264-direct*.test.ts).
 */
import { expect } from 'vitest';
import { FakeWebSocket } from '../test/fake-websocket';
import {
  H264DirectStream,
  type CanvasLike,
  type DirectCounters,
  type EncodedChunkInit,
  type VideoDecoderLike,
  type VideoFrameLike,
} from './h264-direct';
import type { StreamState } from './stream-types';

export class FakeDecoder implements VideoDecoderLike {
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

export class FakeFrame implements VideoFrameLike {
  closed = false;
  constructor(
    readonly displayWidth = 1280,
    readonly displayHeight = 720,
  ) {}
  close(): void {
    this.closed = true;
  }
}

export class FakeCanvas implements CanvasLike {
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

export function videoMessage(key: boolean, payload: number[] = [0, 0, 0, 1, key ? 0x65 : 0x41]) {
  return new Uint8Array([0x01, key ? 1 : 0, ...payload]).buffer;
}

export function setup(options: { supported?: () => boolean } = {}) {
  FakeWebSocket.reset();
  FakeDecoder.instances = [];
  // the animation frames asked for (the draw loop's, and a `painted` announcement's)
  let frameCallbacks = new Map<number, () => void>();
  let nextFrame = 1;
  const stream = new H264DirectStream({
    url: () => 'ws://device.test/api/media/ws',
    createSocket: (url) => new FakeWebSocket(url),
    createDecoder: (output, error) => new FakeDecoder(output, error),
    isSupported: options.supported ?? (() => true),
    now: () => Date.now(),
    requestFrame: (cb) => {
      frameCallbacks.set(nextFrame, cb);
      return nextFrame++;
    },
    cancelFrame: (id) => {
      frameCallbacks.delete(id);
    },
  });
  const states: StreamState[] = [];
  stream.on('state', (s) => states.push(s));
  /** Runs the callbacks asked for before this animation frame. */
  const animate = () => {
    const due = frameCallbacks;
    frameCallbacks = new Map();
    for (const cb of due.values()) cb();
  };
  return { stream, states, animate };
}

export function binarySent(socket: FakeWebSocket): number[][] {
  return socket.sent.filter((d): d is Uint8Array => d instanceof Uint8Array).map((d) => [...d]);
}

/** Opens the socket and plays the server's media hello. */
export function hello(socket: FakeWebSocket, profile = '42c01f') {
  socket.open();
  socket.receiveFrame('media', { video: { h264: { profile_level_id: profile } } });
}

/** received = presented + dropped + what is still in the decoder or waiting to be drawn. */
export function expectBalanced(c: DirectCounters, inFlight: number): void {
  expect(c.received).toBe(c.presented + c.dropped + inFlight);
  expect(c.dropped).toBe(Object.values(c.droppedBy).reduce((a, b) => a + b, 0));
}
