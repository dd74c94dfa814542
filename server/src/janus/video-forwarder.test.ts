import { describe, expect, it, vi } from 'vitest';
import { VideoForwarder } from './video-forwarder';
import { FakeFeed, fakeDeltaUnit, fakeKeyUnit } from './test-support';

/** Forwarder over a fake feed, recording the RTP timestamps of what it sends. */
function setup(
  opts: {
    maxPendingBytes?: number;
    packetsPerTurn?: number;
    maxQueuedPackets?: number;
    turnMs?: number;
  } = {},
  /** ms each send takes on the fake clock */
  sendMs = 0,
) {
  const feed = new FakeFeed();
  const sent: Buffer[] = [];
  let clock = 0;
  const send = (p: Buffer): void => {
    sent.push(p);
    clock += sendMs;
  };
  const fwd = new VideoForwarder(feed, send, 1234, {
    now: () => clock,
    keyFrameRequestIntervalMs: 500,
    ...opts,
  });
  const units = (): number[] => [...new Set(sent.map((p) => p.readUInt32BE(4) / 3000))];
  return { feed, fwd, sent, units, tick: (ms: number) => (clock += ms) };
}

describe('VideoForwarder', () => {
  it('holds the GOP until the transport is up, then sends it and goes live', () => {
    const { feed, fwd, units, tick } = setup();
    feed.push(fakeDeltaUnit(1));
    feed.push(fakeKeyUnit(2));
    fwd.start(); // gets the cache [2]
    feed.push(fakeDeltaUnit(3));
    expect(units()).toEqual([]);
    tick(250);
    fwd.setReady();
    expect(units()).toEqual([2, 3]);
    feed.push(fakeDeltaUnit(4));
    expect(units()).toEqual([2, 3, 4]);
    expect(fwd.stats).toMatchObject({ unitsSent: 3, keyUnitsSent: 1, firstKeyFrameMs: 250 });
    expect(feed.keyFrameRequests).toBe(0);
  });

  it('restarts the held GOP at each key frame', () => {
    const { feed, fwd, units } = setup();
    fwd.start();
    feed.push(fakeDeltaUnit(1)); // nothing to decode it from: dropped
    feed.push(fakeKeyUnit(2));
    feed.push(fakeDeltaUnit(3));
    feed.push(fakeKeyUnit(4));
    feed.push(fakeDeltaUnit(5));
    fwd.setReady();
    expect(units()).toEqual([4, 5]);
    expect(fwd.stats.unitsDropped).toBe(3);
  });

  it('drops deltas until a key frame and asks for one, throttled', () => {
    const { feed, fwd, units, tick } = setup();
    fwd.start();
    fwd.setReady(); // nothing held: asks at once
    expect(feed.keyFrameRequests).toBe(1);
    feed.push(fakeDeltaUnit(1));
    feed.push(fakeDeltaUnit(2));
    expect(feed.keyFrameRequests).toBe(1);
    tick(600);
    feed.push(fakeDeltaUnit(3));
    expect(feed.keyFrameRequests).toBe(2);
    feed.push(fakeKeyUnit(4));
    feed.push(fakeDeltaUnit(5));
    expect(units()).toEqual([4, 5]);
  });

  it('gives up a held GOP that grows too big and asks for a new key frame', () => {
    const { feed, fwd, units } = setup({ maxPendingBytes: 5_000 });
    fwd.start();
    feed.push(fakeKeyUnit(1, 3_000));
    for (let i = 2; i < 20; i++) feed.push(fakeDeltaUnit(i));
    expect(feed.keyFrameRequests).toBe(1);
    expect(feed.drops.get('viewer_lagging')).toBeGreaterThan(0);
    fwd.setReady();
    expect(units()).toEqual([]);
    feed.push(fakeKeyUnit(30, 3_000));
    expect(units()).toEqual([30]);
  });

  it('passes PLI on throttled and stops cleanly', () => {
    const { feed, fwd, sent, tick } = setup();
    fwd.start();
    fwd.setReady();
    feed.push(fakeKeyUnit(1));
    tick(1_000);
    fwd.requestKeyFrame();
    fwd.requestKeyFrame();
    expect(feed.keyFrameRequests).toBe(2);
    fwd.stop();
    expect(feed.viewers.size).toBe(0);
    const n = sent.length;
    feed.push(fakeKeyUnit(2));
    expect(sent.length).toBe(n);
    expect(fwd.running).toBe(false);
  });

  it('keeps RTP sequence numbers continuous across units', () => {
    const { feed, fwd, sent } = setup();
    fwd.start();
    fwd.setReady();
    feed.push(fakeKeyUnit(1));
    feed.push(fakeDeltaUnit(2));
    feed.push(fakeKeyUnit(3));
    const seqs = sent.map((p) => p.readUInt16BE(2));
    expect(seqs.every((s, i) => i === 0 || s === ((seqs[i - 1]! + 1) & 0xffff))).toBe(true);
    const markers = sent.filter((p) => p[1]! & 0x80).map((p) => p.readUInt32BE(4) / 3000);
    expect(markers).toEqual([1, 2, 3]);
  });

  it('sends a big unit over several loop turns, in order, with other work in between', async () => {
    const { feed, fwd, sent } = setup({ packetsPerTurn: 4 });
    fwd.start();
    fwd.setReady();
    feed.push(fakeKeyUnit(1, 12_000)); // STAP-A + 11 FU-A
    feed.push(fakeDeltaUnit(2));
    expect(sent.length).toBe(4);
    // what the loop does between two turns (a data channel message) runs before the rest
    let ranBetween = -1;
    setImmediate(() => (ranBetween = sent.length));
    await vi.waitFor(() => expect(fwd.stats.packetsSent).toBe(13));
    expect(ranBetween).toBeGreaterThanOrEqual(4);
    expect(ranBetween).toBeLessThan(13);
    expect(sent.length).toBe(13);
    expect(fwd.stats.yields).toBeGreaterThan(0);
    const seqs = sent.map((p) => p.readUInt16BE(2));
    expect(seqs.every((s, i) => i === 0 || s === ((seqs[i - 1]! + 1) & 0xffff))).toBe(true);
    const markers = sent.filter((p) => p[1]! & 0x80).map((p) => p.readUInt32BE(4) / 3000);
    expect(markers).toEqual([1, 2]);
  });

  it('ends a turn when its time is spent, whatever its packet budget left', async () => {
    // 0.3 ms a packet, 0.5 ms a turn: two packets a turn (the second crosses the limit)
    const { feed, fwd, sent } = setup({ packetsPerTurn: 16, turnMs: 0.5 }, 0.3);
    fwd.start();
    fwd.setReady();
    feed.push(fakeKeyUnit(1, 12_000)); // STAP-A + 11 FU-A
    expect(sent.length).toBe(2);
    feed.push(fakeDeltaUnit(2)); // the same turn: its time is spent, it waits
    expect(sent.length).toBe(2);
    const perTurn: number[] = [];
    let last = sent.length;
    const watch = (): void => {
      perTurn.push(sent.length - last);
      last = sent.length;
      if (fwd.stats.packetsSent < 13) setImmediate(watch);
    };
    setImmediate(watch);
    await vi.waitFor(() => expect(fwd.stats.packetsSent).toBe(13));
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(2);
    const seqs = sent.map((p) => p.readUInt16BE(2));
    expect(seqs.every((s, i) => i === 0 || s === ((seqs[i - 1]! + 1) & 0xffff))).toBe(true);
  });

  it('sends a backlog over the bound at once, and nothing queued after stop', async () => {
    const { feed, fwd, sent } = setup({ packetsPerTurn: 2, maxQueuedPackets: 8 });
    fwd.start();
    fwd.setReady();
    feed.push(fakeKeyUnit(1, 12_000)); // 12 packets > 8: all now
    expect(sent.length).toBe(12);
    feed.push(fakeKeyUnit(2, 6_000)); // 7 packets, no budget left this turn
    expect(sent.length).toBe(12);
    fwd.stop();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(sent.length).toBe(12);
  });
});
