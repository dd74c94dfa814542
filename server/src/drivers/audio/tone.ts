/**
 * Tones in 16-bit PCM: how strong one frequency is (Goertzel) and which frequency dominates.
 * The testbed's simulated sound and microphone, the tests and the audio bench use it; the
 * guest's `tone`/`hear` commands do the same arithmetic in C (scripts/guest/).
 */

/** Interleaved signed 16-bit samples, as ffmpeg's `s16le` writes them. */
export function s16(buf: Buffer): Int16Array {
  const even = buf.length - (buf.length % 2);
  const copy = Buffer.from(buf.subarray(0, even));
  return new Int16Array(copy.buffer, copy.byteOffset, even / 2);
}

/** The first channel's samples as -1..1. */
function mono(pcm: Int16Array, channels: number): Float64Array {
  const n = Math.floor(pcm.length / channels);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i += 1) out[i] = pcm[i * channels]! / 32768;
  return out;
}

/** Root mean square of the first channel, 0..1 (a full-scale sine is 0.707). */
export function rms(pcm: Int16Array, channels: number): number {
  const x = mono(pcm, channels);
  if (x.length === 0) return 0;
  let sum = 0;
  for (const v of x) sum += v * v;
  return Math.sqrt(sum / x.length);
}

/**
 * The amplitude of `hz` in the first channel, 0..1 (a full-scale sine at `hz` gives about 1):
 * Goertzel over the whole buffer with a Hann window.
 */
export function toneLevel(
  pcm: Int16Array,
  sampleRate: number,
  channels: number,
  hz: number,
): number {
  const x = mono(pcm, channels);
  const n = x.length;
  if (n < 2) return 0;
  const w = (2 * Math.PI * hz) / sampleRate;
  const coeff = 2 * Math.cos(w);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < n; i += 1) {
    const hann = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1));
    const s0 = x[i]! * hann + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  const power = s1 * s1 + s2 * s2 - coeff * s1 * s2;
  // a Hann-windowed sine of amplitude A gives |X| = A * n / 4
  return Math.min(1, (Math.sqrt(Math.max(0, power)) * 4) / n);
}

/**
 * The strongest frequency between `minHz` and `maxHz` (steps of `stepHz`) and its level, with
 * the buffer's RMS: `{ hz: 0 }` for silence.
 */
export function dominantFrequency(
  pcm: Int16Array,
  sampleRate: number,
  channels: number,
  opts: { minHz?: number; maxHz?: number; stepHz?: number } = {},
): { hz: number; level: number; rms: number } {
  const level = rms(pcm, channels);
  if (level < 1e-4) return { hz: 0, level: 0, rms: level };
  const { minHz = 100, maxHz = 8000, stepHz = 10 } = opts;
  let best = { hz: 0, level: 0 };
  for (let hz = minHz; hz <= maxHz; hz += stepHz) {
    const l = toneLevel(pcm, sampleRate, channels, hz);
    if (l > best.level) best = { hz, level: l };
  }
  return { ...best, rms: level };
}

/** One period-exact sine of `hz` as interleaved s16le, `ms` long, at `amplitude` 0..1. */
export function sinePcm(
  hz: number,
  ms: number,
  opts: { sampleRate?: number; channels?: number; amplitude?: number; phase?: number } = {},
): Buffer {
  const { sampleRate = 48000, channels = 2, amplitude = 0.5, phase = 0 } = opts;
  const frames = Math.round((sampleRate * ms) / 1000);
  const out = Buffer.alloc(frames * channels * 2);
  for (let i = 0; i < frames; i += 1) {
    const v = Math.round(
      amplitude * 32767 * Math.sin((2 * Math.PI * hz * (i + phase)) / sampleRate),
    );
    for (let c = 0; c < channels; c += 1) out.writeInt16LE(v, (i * channels + c) * 2);
  }
  return out;
}
