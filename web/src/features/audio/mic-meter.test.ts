import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MIC_METER } from '@kvm/protocol/audio';
import { MicMeter, meterLevel, type AnalyserLike, type MeterContextLike } from './mic-meter';

class FakeAnalyser implements AnalyserLike {
  fftSize = 2048;
  smoothingTimeConstant = 0.8;
  bins: number[] = [];
  reads = 0;
  get frequencyBinCount(): number {
    return this.fftSize / 2;
  }
  getByteFrequencyData(array: Uint8Array<ArrayBuffer>): void {
    this.reads += 1;
    array.set(this.bins.slice(0, array.length));
  }
}

class FakeContext implements MeterContextLike {
  readonly analyser = new FakeAnalyser();
  connected: unknown[] = [];
  closed = false;
  disconnected = false;
  createMediaStreamSource() {
    return {
      connect: (node: never) => this.connected.push(node),
      disconnect: () => {
        this.disconnected = true;
      },
    };
  }
  createAnalyser(): AnalyserLike {
    return this.analyser;
  }
  resume(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

describe('MicMeter (SPEC 9)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('reads an analyser with smoothing 0.2 and FFT 32 every 100 ms', () => {
    const context = new FakeContext();
    const levels: number[] = [];
    const meter = new MicMeter(
      (l) => levels.push(l),
      () => context,
    );
    meter.start({} as MediaStream);
    expect(context.analyser.fftSize).toBe(MIC_METER.fftSize);
    expect(context.analyser.fftSize).toBe(32);
    expect(context.analyser.smoothingTimeConstant).toBe(0.2);
    expect(context.connected).toEqual([context.analyser]);

    context.analyser.bins = new Array<number>(16).fill(255);
    vi.advanceTimersByTime(99);
    expect(levels).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(levels).toEqual([1]);
    context.analyser.bins = [...new Array<number>(8).fill(102), ...new Array<number>(8).fill(0)];
    vi.advanceTimersByTime(100);
    expect(levels.at(-1)).toBeCloseTo(0.2, 5);
    expect(context.analyser.reads).toBe(2);

    meter.stop();
    expect(levels.at(-1)).toBe(0);
    expect(context.closed).toBe(true);
    expect(context.disconnected).toBe(true);
    vi.advanceTimersByTime(1000);
    expect(context.analyser.reads).toBe(2);
  });

  it('runs without a meter when no audio context can be made', () => {
    const levels: number[] = [];
    const meter = new MicMeter(
      (l) => levels.push(l),
      () => {
        throw new Error('too many contexts');
      },
    );
    meter.start({} as MediaStream);
    vi.advanceTimersByTime(500);
    meter.stop();
    expect(levels).toEqual([]);
  });

  it('meterLevel is the mean of the bins over 255', () => {
    expect(meterLevel(new Uint8Array())).toBe(0);
    expect(meterLevel(new Uint8Array([0, 255]))).toBe(0.5);
  });
});
