/**
 * The microphone meter of SPEC 9: an AnalyserNode with smoothing 0.2 and FFT size 32, read
 * every 100 ms (MIC_METER). The level is the mean of the frequency bins, 0..1; the smoothing
 * acts on exactly these (Web Audio applies it to the frequency data).
 */
import { MIC_METER } from '@kvm/protocol/audio';

/** The parts of AnalyserNode used here. */
export interface AnalyserLike {
  fftSize: number;
  smoothingTimeConstant: number;
  readonly frequencyBinCount: number;
  getByteFrequencyData(array: Uint8Array<ArrayBuffer>): void;
}

/** The parts of AudioContext used here. */
export interface MeterContextLike {
  createMediaStreamSource(stream: MediaStream): {
    connect(node: never): unknown;
    disconnect(): void;
  };
  createAnalyser(): AnalyserLike;
  resume?(): Promise<void>;
  close(): Promise<void>;
}

/** Mean of the bins, 0..1. */
export function meterLevel(bins: Uint8Array): number {
  if (bins.length === 0) return 0;
  let sum = 0;
  for (const value of bins) sum += value;
  return Math.min(1, sum / bins.length / 255);
}

function defaultContext(): MeterContextLike | null {
  const Ctor = (globalThis as { AudioContext?: new () => MeterContextLike }).AudioContext;
  return Ctor ? new Ctor() : null;
}

export class MicMeter {
  private context: MeterContextLike | null = null;
  private source: { disconnect(): void } | null = null;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly onLevel: (level: number) => void,
    private readonly createContext: () => MeterContextLike | null = defaultContext,
  ) {}

  start(stream: MediaStream): void {
    this.stop();
    let context: MeterContextLike | null;
    try {
      context = this.createContext();
    } catch {
      context = null; // Too many contexts, or none in this browser: no meter, the mic still works.
    }
    if (!context) return;
    const source = context.createMediaStreamSource(stream);
    const analyser = context.createAnalyser();
    analyser.smoothingTimeConstant = MIC_METER.smoothing;
    analyser.fftSize = MIC_METER.fftSize;
    source.connect(analyser as never);
    // A context made outside a click starts suspended; the mic button's click has let it run.
    context.resume?.().catch(() => undefined);
    this.context = context;
    this.source = source;
    const bins = new Uint8Array(analyser.frequencyBinCount);
    this.timer = setInterval(() => {
      analyser.getByteFrequencyData(bins);
      this.onLevel(meterLevel(bins));
    }, MIC_METER.intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    const hadOne = this.context !== null;
    try {
      this.source?.disconnect();
    } catch {
      // Already disconnected.
    }
    this.context?.close().catch(() => undefined);
    this.source = null;
    this.context = null;
    if (hadOne) this.onLevel(0);
  }
}
