import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  CONNECT_TIMEOUT_MS,
  GATEWAY_RETRY_MS,
  JANUS_STREAM_TRANSITIONS,
  STREAM_ERROR_RETRY_MS,
  type JanusStream,
} from './janus-stream';
import {
  ANSWER,
  FakeHandle,
  OFFER,
  firstFrame,
  negotiate,
  setup,
  type FakeRuntime,
  type FakeSession,
} from './janus-stream-test-kit';
import type { StreamState } from './stream-types';
import { IllegalTransitionError } from '@kvm/protocol/transitions';

describe('JanusStream state transitions', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** Every `from->to` a stream made, read from its state events. */
  function recordMoves(stream: JanusStream, into: Set<string>) {
    let from = stream.getState();
    stream.on('state', (to) => {
      into.add(`${from}->${to}`);
      from = to;
    });
  }

  /** Up to 'attached': the handle is there, the features answer not yet. */
  async function attach(runtime: FakeRuntime): Promise<FakeSession> {
    await vi.advanceTimersByTimeAsync(0);
    const session = runtime.last();
    session.options.success();
    session.plugin.success(new FakeHandle());
    return session;
  }

  const features = { result: { status: 'features', features: {} } };

  // One short life per group of moves; together they must make every move of the map.
  const scenarios: Record<string, (s: ReturnType<typeof setup>) => Promise<void>> = {
    'stopped before it started': async ({ stream }) => {
      stream.stop();
      stream.start();
    },
    'stopped while connecting': async ({ stream }) => {
      stream.start();
      stream.stop();
    },
    'connect timeout, then start() again from error': async ({ stream }) => {
      stream.start();
      await vi.advanceTimersByTimeAsync(CONNECT_TIMEOUT_MS);
      stream.start();
    },
    'stopped while attached': async ({ runtime, stream }) => {
      stream.start();
      await attach(runtime);
      stream.stop();
    },
    'plugin error answering features': async ({ runtime, stream }) => {
      stream.start();
      const session = await attach(runtime);
      session.plugin.onmessage({ error_code: 503, error: 'No source' });
      await vi.advanceTimersByTimeAsync(STREAM_ERROR_RETRY_MS); // error -> watching
    },
    'server stops while watching, stopped while watching': async ({ runtime, stream }) => {
      stream.start();
      const session = await attach(runtime);
      session.plugin.onmessage(features);
      session.plugin.onmessage({ result: { status: 'stopped' } }); // watching -> attached
      await vi.advanceTimersByTimeAsync(STREAM_ERROR_RETRY_MS); // attached -> watching
      stream.stop();
    },
    'peer fails while watching, new session after 5 s': async ({ runtime, stream }) => {
      stream.start();
      const session = await attach(runtime);
      session.plugin.onmessage(features);
      session.plugin.iceState('failed');
      await vi.advanceTimersByTimeAsync(GATEWAY_RETRY_MS); // error -> connecting
    },
    'active, server stops; active, error, stopped from error': async ({ runtime, stream }) => {
      stream.start();
      const handle = await negotiate(runtime);
      await firstFrame(handle);
      runtime.last().plugin.onmessage({ result: { status: 'stopped' } }); // active -> attached
      await vi.advanceTimersByTimeAsync(STREAM_ERROR_RETRY_MS); // attached -> watching
      // The answer to our own stop, then a new offer for the new watch.
      runtime.last().plugin.onmessage({ result: { status: 'stopped' } });
      runtime.last().plugin.onmessage({ result: { status: 'started' } }, OFFER);
      handle.answers.at(-1)?.success(ANSWER);
      handle.pc.setVideo(20_000, 2, 2_000);
      await vi.advanceTimersByTimeAsync(250); // active again
      expect(stream.getState()).toBe('active');
      runtime.last().plugin.webrtcState(false); // active -> error
      stream.stop();
    },
    'stopped while active': async ({ runtime, stream }) => {
      stream.start();
      await firstFrame(await negotiate(runtime));
      stream.stop();
    },
  };

  it('makes every move of JANUS_STREAM_TRANSITIONS and no other', async () => {
    const made = new Set<string>();
    for (const run of Object.values(scenarios)) {
      const s = setup();
      recordMoves(s.stream, made);
      await run(s);
      s.stream.stop();
    }
    const allowed = Object.entries(JANUS_STREAM_TRANSITIONS).flatMap(([from, tos]) =>
      tos.map((to) => `${from}->${to}`),
    );
    expect([...made].sort()).toEqual(allowed.sort());
  });

  it('throws on an illegal move and stays where it was', () => {
    const { stream } = setup();
    // setState is private: only a bug inside the class could ask for idle -> active.
    const internal = stream as unknown as { setState(state: StreamState): void };
    expect(() => internal.setState('active')).toThrow(IllegalTransitionError);
    expect(() => internal.setState('active')).toThrow(
      'JanusStream: illegal state transition idle -> active',
    );
    expect(stream.getState()).toBe('idle');
  });

  it('ignores a features answer it did not ask for (no active -> watching)', async () => {
    const { runtime, stream } = setup();
    stream.start();
    const handle = await negotiate(runtime);
    await firstFrame(handle);
    const before = handle.sent.length;
    runtime.last().plugin.onmessage({ result: { status: 'features', features: {} } });
    expect(stream.getState()).toBe('active');
    expect(handle.sent.length).toBe(before);
  });
});
