/**
 * JanusStream's look at its peer connection's stats (SPEC 4/9): while watching, for the first
 * decoded frame (that is 'active'; every 40 ms for the first second, then every 250 ms); while
 * active, the stream info every 1 s and the connection type (relay or p2p, from the selected
 * candidate pair) every 5 s.
 *
 * Its callbacks check the session generation the stream gives it, as the stream's own do: a
 * stats answer of an older session does nothing.
 */
import type { PeerConnectionLike } from './janus-types';
import {
  CONNECTION_TYPE_MS,
  FIRST_FRAME_PROBE_MS,
  FIRST_FRAME_QUICK_PROBES,
  FIRST_FRAME_QUICK_PROBE_MS,
  STREAM_INFO_MS,
} from './janus-stream-timing';
import {
  computeStreamRate,
  connectionTypeFromStats,
  inboundVideoFromStats,
  type InboundVideoSample,
} from './rtc-stats';
import type { StreamInfo, StreamState } from './stream-types';

/** What the stats need of the stream. */
export interface JanusStatsHost {
  /** The current peer connection (null: none). */
  peer(): PeerConnectionLike | null;
  /** Bumped by the stream on every teardown. */
  generation(): number;
  state(): StreamState;
  /** The first frame is decoded: the stream moves to 'active'. */
  activate(): void;
  /** The info changed. */
  emitInfo(info: StreamInfo): void;
}

export class JanusStreamStats {
  info: StreamInfo = { bitrateKbps: 0, fps: 0, connection: null };
  private readonly host: JanusStatsHost;
  private lastSample: InboundVideoSample | null = null;
  private lastSampleAt = 0;
  private probeTimer: ReturnType<typeof setTimeout> | undefined;
  private infoTimer: ReturnType<typeof setInterval> | undefined;
  private typeTimer: ReturnType<typeof setInterval> | undefined;

  constructor(host: JanusStatsHost) {
    this.host = host;
  }

  /** Looks for the first decoded frame, quickly at first (the answer has gone out). */
  startProbe(): void {
    clearTimeout(this.probeTimer);
    const gen = this.host.generation();
    let looks = 0;
    const next = (): void => {
      const wait =
        looks < FIRST_FRAME_QUICK_PROBES ? FIRST_FRAME_QUICK_PROBE_MS : FIRST_FRAME_PROBE_MS;
      looks += 1;
      this.probeTimer = setTimeout(() => {
        if (gen !== this.host.generation()) return;
        next();
        const pc = this.host.peer();
        if (!pc) return;
        pc.getStats().then(
          (report) => {
            if (gen !== this.host.generation() || this.host.state() !== 'watching') return;
            const sample = inboundVideoFromStats(report);
            if (sample && sample.framesDecoded > 0) this.becomeActive(sample);
          },
          () => undefined,
        );
      }, wait);
    };
    next();
  }

  /** Stops every timer and forgets the last sample (the info stays until clearInfo). */
  stopTimers(): void {
    clearTimeout(this.probeTimer);
    clearInterval(this.infoTimer);
    clearInterval(this.typeTimer);
    this.probeTimer = this.infoTimer = this.typeTimer = undefined;
    this.lastSample = null;
  }

  /** Back to no figures, said once. */
  clearInfo(): void {
    if (this.info.bitrateKbps !== 0 || this.info.fps !== 0 || this.info.connection !== null) {
      this.info = { bitrateKbps: 0, fps: 0, connection: null };
      this.host.emitInfo(this.info);
    }
  }

  private becomeActive(sample: InboundVideoSample): void {
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
    this.lastSample = sample;
    this.lastSampleAt = sample.timestamp ?? Date.now();
    this.host.activate();
    const gen = this.host.generation();
    this.infoTimer = setInterval(() => {
      if (gen === this.host.generation()) void this.refreshInfo(gen);
    }, STREAM_INFO_MS);
    this.typeTimer = setInterval(() => {
      if (gen === this.host.generation()) void this.refreshConnectionType(gen);
    }, CONNECTION_TYPE_MS);
    void this.refreshConnectionType(gen);
  }

  private async refreshInfo(gen: number): Promise<void> {
    const pc = this.host.peer();
    if (!pc) return;
    const report = await pc.getStats().catch(() => null);
    if (!report || gen !== this.host.generation()) return;
    const sample = inboundVideoFromStats(report);
    if (!sample) return;
    const at = sample.timestamp ?? Date.now();
    const rate = computeStreamRate(this.lastSample, sample, at - this.lastSampleAt);
    this.lastSample = sample;
    this.lastSampleAt = at;
    this.setInfo({ ...this.info, ...rate });
  }

  private async refreshConnectionType(gen: number): Promise<void> {
    const pc = this.host.peer();
    if (!pc) return;
    const report = await pc.getStats().catch(() => null);
    if (!report || gen !== this.host.generation()) return;
    const connection = connectionTypeFromStats(report);
    if (connection !== this.info.connection) this.setInfo({ ...this.info, connection });
  }

  private setInfo(info: StreamInfo): void {
    this.info = info;
    this.host.emitInfo(info);
  }
}
