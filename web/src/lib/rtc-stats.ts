/**
 * Reading an RTCPeerConnection's stats report: the inbound video (bytes, decoded frames) for the
 * first-frame probe and the stream info, and the connection type from the selected candidate
 * pair. Pure functions over the report, so they are tested with plain maps.
 */

type StatsEntry = Record<string, unknown> & { id?: string; type?: string };

function statsEntries(report: ReadonlyMap<string, unknown> | RTCStatsReport): StatsEntry[] {
  const out: StatsEntry[] = [];
  report.forEach((value) => {
    if (typeof value === 'object' && value !== null) out.push(value as StatsEntry);
  });
  return out;
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export interface InboundVideoSample {
  bytesReceived: number;
  framesDecoded: number;
  framesPerSecond: number | undefined;
  /** ms */
  timestamp: number | undefined;
}

/** The inbound-rtp video entry of a stats report. */
export function inboundVideoFromStats(
  report: ReadonlyMap<string, unknown> | RTCStatsReport,
): InboundVideoSample | null {
  for (const s of statsEntries(report)) {
    if (s.type !== 'inbound-rtp' || (s['kind'] ?? s['mediaType']) !== 'video') continue;
    return {
      bytesReceived: num(s['bytesReceived']) ?? 0,
      framesDecoded: num(s['framesDecoded']) ?? 0,
      framesPerSecond: num(s['framesPerSecond']),
      timestamp: num(s['timestamp']),
    };
  }
  return null;
}

/**
 * relay when either end of the selected candidate pair is a TURN relay candidate, else p2p;
 * null while no pair is selected.
 */
export function connectionTypeFromStats(
  report: ReadonlyMap<string, unknown> | RTCStatsReport,
): 'relay' | 'p2p' | null {
  const entries = statsEntries(report);
  const byId = new Map<string, StatsEntry>();
  for (const s of entries) if (typeof s.id === 'string') byId.set(s.id, s);
  let pair: StatsEntry | undefined;
  for (const s of entries) {
    if (s.type === 'transport' && typeof s['selectedCandidatePairId'] === 'string') {
      pair = byId.get(s['selectedCandidatePairId']);
      if (pair) break;
    }
  }
  // Firefox has no transport entry: its pair says `selected`.
  pair ??= entries.find(
    (s) =>
      s.type === 'candidate-pair' &&
      (s['selected'] === true || (s['nominated'] === true && s['state'] === 'succeeded')),
  );
  if (!pair) return null;
  const local = byId.get(String(pair['localCandidateId']));
  const remote = byId.get(String(pair['remoteCandidateId']));
  return local?.['candidateType'] === 'relay' || remote?.['candidateType'] === 'relay'
    ? 'relay'
    : 'p2p';
}

/** Bitrate and fps between two samples of the inbound video. */
export function computeStreamRate(
  previous: InboundVideoSample | null,
  current: InboundVideoSample,
  elapsedMs: number,
): { bitrateKbps: number; fps: number } {
  if (!previous || elapsedMs <= 0) {
    return { bitrateKbps: 0, fps: Math.round(current.framesPerSecond ?? 0) };
  }
  const bytes = Math.max(0, current.bytesReceived - previous.bytesReceived);
  const frames = Math.max(0, current.framesDecoded - previous.framesDecoded);
  return {
    // bits per millisecond are kbit/s.
    bitrateKbps: Math.round((bytes * 8) / elapsedMs),
    fps: Math.round(current.framesPerSecond ?? (frames * 1000) / elapsedMs),
  };
}
