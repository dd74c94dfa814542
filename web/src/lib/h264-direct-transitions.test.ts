import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeWebSocket } from '../test/fake-websocket';
import { H264_DIRECT_TRANSITIONS, MEDIA_RECONNECT_MS } from './h264-direct';
import { FakeDecoder, FakeFrame, videoMessage, setup, hello } from './h264-direct-test-kit';
import type { StreamState } from './stream-types';
import { IllegalTransitionError } from '@kvm/protocol/transitions';

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
