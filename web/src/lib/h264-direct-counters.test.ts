import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeWebSocket } from '../test/fake-websocket';
import {
  FakeDecoder,
  FakeFrame,
  FakeCanvas,
  videoMessage,
  setup,
  hello,
  expectBalanced,
} from './h264-direct-test-kit';
import { CATCH_UP_MS, MAX_DECODE_QUEUE, MAX_DECODE_QUEUE_STARTING } from './h264-direct-pipeline';

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
    const decoder = FakeDecoder.instances[0]!;
    decoder.output(new FakeFrame()); // decoding: its start is over
    for (let i = 0; i < 31; i += 1) socket.receive(videoMessage(false));
    decoder.decodeQueueSize = 31;
    socket.receive(videoMessage(false)); // reset; a delta cannot restart
    expect(stream.counters().droppedBy).toMatchObject({ decoder: 31, before_key: 1 });
    expectBalanced(stream.counters(), 1);
  });

  /** A stream past its hello whose decoder has been handed the first key frame. */
  function startedOnKey() {
    const { stream } = setup();
    stream.start();
    const socket = FakeWebSocket.last();
    hello(socket);
    const decoder = FakeDecoder.instances[0]!;
    socket.receive(videoMessage(true));
    return { stream, socket, decoder };
  }

  it("takes a viewer's start (the cached GOP at once) before the first picture, within a larger bound", () => {
    const { stream, socket, decoder } = startedOnKey();
    // the whole GOP arrives while the decoder is still starting: no reset
    for (let i = 1; i <= 100; i += 1) {
      decoder.decodeQueueSize = i;
      socket.receive(videoMessage(false));
    }
    expect(decoder.chunks).toHaveLength(101);
    expect(decoder.state).toBe('configured');
    expect(stream.counters().droppedBy.decoder).toBe(0);
    // beyond MAX_DECODE_QUEUE_STARTING it is a decoder that does not decode: start over
    decoder.decodeQueueSize = MAX_DECODE_QUEUE_STARTING + 1;
    socket.receive(videoMessage(false));
    expect(stream.counters().droppedBy).toMatchObject({ decoder: 101, before_key: 1 });
    // after a reset the next key frame is a start again
    decoder.decodeQueueSize = 0;
    socket.receive(videoMessage(true));
    decoder.decodeQueueSize = MAX_DECODE_QUEUE + 5;
    socket.receive(videoMessage(false));
    expect(decoder.chunks).toHaveLength(103);
    // the first picture with the burst's rest still queued: a start still
    decoder.output(new FakeFrame());
    decoder.decodeQueueSize = MAX_DECODE_QUEUE + 20;
    socket.receive(videoMessage(false));
    expect(decoder.chunks).toHaveLength(104);
    // worked down to the live bound: from now on more than that is lag
    decoder.decodeQueueSize = MAX_DECODE_QUEUE;
    decoder.output(new FakeFrame());
    decoder.decodeQueueSize = MAX_DECODE_QUEUE + 1;
    socket.receive(videoMessage(false));
    expect(decoder.chunks).toHaveLength(104);
    expect(stream.counters().droppedBy.decoder).toBeGreaterThan(101);
  });

  it('ends a start that does not catch up CATCH_UP_MS after its first picture', () => {
    const { stream, socket, decoder } = startedOnKey();
    decoder.decodeQueueSize = MAX_DECODE_QUEUE + 20;
    decoder.output(new FakeFrame());
    // a decoder that keeps pace with the frames but never works its backlog down
    vi.advanceTimersByTime(CATCH_UP_MS - 1);
    decoder.output(new FakeFrame());
    socket.receive(videoMessage(false));
    expect(decoder.chunks).toHaveLength(2);
    vi.advanceTimersByTime(1);
    decoder.output(new FakeFrame());
    // over the live bound now: started over, waiting for a key frame
    socket.receive(videoMessage(false));
    expect(decoder.chunks).toHaveLength(2);
    expect(stream.counters().droppedBy.before_key).toBe(1);
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
