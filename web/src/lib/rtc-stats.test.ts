import { describe, expect, it } from 'vitest';
import {
  computeStreamRate,
  connectionTypeFromStats,
  inboundVideoFromStats,
  type InboundVideoSample,
} from './rtc-stats';

function report(...entries: Array<Record<string, unknown>>): Map<string, unknown> {
  return new Map(entries.map((e, i) => [String(e['id'] ?? `e${i}`), e]));
}

function sample(partial: Partial<InboundVideoSample>): InboundVideoSample {
  return {
    bytesReceived: 0,
    framesDecoded: 0,
    framesPerSecond: undefined,
    timestamp: undefined,
    ...partial,
  };
}

describe('inboundVideoFromStats', () => {
  it('reads the inbound-rtp video entry and skips audio and other types', () => {
    const stats = report(
      { id: 'a', type: 'inbound-rtp', kind: 'audio', bytesReceived: 1, framesDecoded: 0 },
      { id: 'o', type: 'outbound-rtp', kind: 'video', bytesReceived: 2, framesDecoded: 2 },
      {
        id: 'v',
        type: 'inbound-rtp',
        kind: 'video',
        bytesReceived: 5_000,
        framesDecoded: 12,
        framesPerSecond: 30,
        timestamp: 1_234.5,
      },
    );
    expect(inboundVideoFromStats(stats)).toEqual({
      bytesReceived: 5_000,
      framesDecoded: 12,
      framesPerSecond: 30,
      timestamp: 1_234.5,
    });
  });

  it('accepts the older mediaType field (Safari, older Chromium)', () => {
    const stats = report({ type: 'inbound-rtp', mediaType: 'video', framesDecoded: 3 });
    expect(inboundVideoFromStats(stats)?.framesDecoded).toBe(3);
  });

  it('counts missing or non-finite counters as 0 and leaves rate and time unknown', () => {
    const stats = report({
      type: 'inbound-rtp',
      kind: 'video',
      bytesReceived: Number.NaN,
      framesDecoded: '7',
      framesPerSecond: Number.POSITIVE_INFINITY,
    });
    expect(inboundVideoFromStats(stats)).toEqual({
      bytesReceived: 0,
      framesDecoded: 0,
      framesPerSecond: undefined,
      timestamp: undefined,
    });
  });

  it('is null without an inbound video entry, and ignores entries that are not objects', () => {
    expect(inboundVideoFromStats(new Map())).toBeNull();
    expect(
      inboundVideoFromStats(
        new Map<string, unknown>([
          ['x', null],
          ['y', 3],
        ]),
      ),
    ).toBeNull();
  });
});

describe('connectionTypeFromStats', () => {
  const candidates = (local: string, remote: string) => [
    { id: 'l', type: 'local-candidate', candidateType: local },
    { id: 'r', type: 'remote-candidate', candidateType: remote },
  ];

  it("follows the transport's selected pair (Chromium)", () => {
    const stats = report(
      { id: 't', type: 'transport', selectedCandidatePairId: 'cp' },
      // Another pair, not selected, over a relay: must not count.
      { id: 'cp2', type: 'candidate-pair', localCandidateId: 'l2', remoteCandidateId: 'r' },
      { id: 'l2', type: 'local-candidate', candidateType: 'relay' },
      { id: 'cp', type: 'candidate-pair', localCandidateId: 'l', remoteCandidateId: 'r' },
      ...candidates('host', 'srflx'),
    );
    expect(connectionTypeFromStats(stats)).toBe('p2p');
  });

  it('says relay when either end of the pair is a relay candidate', () => {
    const pair = {
      id: 'cp',
      type: 'candidate-pair',
      localCandidateId: 'l',
      remoteCandidateId: 'r',
    };
    const transport = { id: 't', type: 'transport', selectedCandidatePairId: 'cp' };
    expect(connectionTypeFromStats(report(transport, pair, ...candidates('relay', 'host')))).toBe(
      'relay',
    );
    expect(connectionTypeFromStats(report(transport, pair, ...candidates('host', 'relay')))).toBe(
      'relay',
    );
  });

  it('reads the selected pair in Firefox (no transport entry)', () => {
    const pair = (extra: Record<string, unknown>) => ({
      id: 'cp',
      type: 'candidate-pair',
      localCandidateId: 'l',
      remoteCandidateId: 'r',
      ...extra,
    });
    expect(
      connectionTypeFromStats(report(pair({ selected: true }), ...candidates('host', 'relay'))),
    ).toBe('relay');
    expect(
      connectionTypeFromStats(report(pair({ selected: true }), ...candidates('srflx', 'prflx'))),
    ).toBe('p2p');
    expect(
      connectionTypeFromStats(
        report(pair({ nominated: true, state: 'succeeded' }), ...candidates('host', 'host')),
      ),
    ).toBe('p2p');
  });

  it('is null while no pair is selected', () => {
    expect(connectionTypeFromStats(new Map())).toBeNull();
    const inProgress = report(
      { id: 'cp', type: 'candidate-pair', nominated: true, state: 'in-progress' },
      ...candidates('host', 'host'),
    );
    expect(connectionTypeFromStats(inProgress)).toBeNull();
    // A transport naming a pair the report does not hold.
    expect(
      connectionTypeFromStats(report({ id: 't', type: 'transport', selectedCandidatePairId: 'x' })),
    ).toBeNull();
  });
});

describe('computeStreamRate', () => {
  it('gives bitrate (kbit/s) and fps from the deltas when framesPerSecond is missing', () => {
    const a = sample({ timestamp: 0 });
    const b = sample({ bytesReceived: 125_000, framesDecoded: 15, timestamp: 500 });
    expect(computeStreamRate(a, b, 500)).toEqual({ bitrateKbps: 2000, fps: 30 });
  });

  it("prefers the browser's framesPerSecond", () => {
    const a = sample({ bytesReceived: 0, framesDecoded: 0 });
    const b = sample({ bytesReceived: 250_000, framesDecoded: 60, framesPerSecond: 24.6 });
    expect(computeStreamRate(a, b, 1_000)).toEqual({ bitrateKbps: 2000, fps: 25 });
  });

  it('has no bitrate without a previous sample or elapsed time', () => {
    const b = sample({ bytesReceived: 9_999, framesDecoded: 9, framesPerSecond: 29.7 });
    expect(computeStreamRate(null, b, 1_000)).toEqual({ bitrateKbps: 0, fps: 30 });
    expect(computeStreamRate(sample({}), b, 0)).toEqual({ bitrateKbps: 0, fps: 30 });
    expect(computeStreamRate(null, sample({}), 1_000)).toEqual({ bitrateKbps: 0, fps: 0 });
  });

  it('never goes negative when the counters restart (a new inbound-rtp entry)', () => {
    const a = sample({ bytesReceived: 500_000, framesDecoded: 300 });
    const b = sample({ bytesReceived: 1_000, framesDecoded: 2 });
    expect(computeStreamRate(a, b, 1_000)).toEqual({ bitrateKbps: 0, fps: 0 });
  });
});
