// Tests and benches reach this driver as `app.ctx.drivers.testbedAudio` (testbed target only).
/**
 * The testbed's sound (docs/drivers.md "Audio (testbed)"): there is no computer, so the sound
 * is generated and said to be simulated everywhere it shows. It is silence, with a tone on
 * demand (`tone`), written in real time in 20 ms chunks into ffmpeg's stdin as s16le 48 kHz
 * stereo. The microphone is decoded to s16le on ffmpeg's stdout and measured (`heard`).
 *
 * The tone follows the wall clock like a real computer's sound: it plays whether or not anyone
 * listens, and a listener that joins late hears its rest.
 */
import type { Readable, Writable } from 'node:stream';
import { AUDIO_FORMAT } from '@kvm/protocol';
import { s16, toneLevel } from './tone';
import type { AudioCapture, AudioDriver, AudioPlayback } from './types';

const RATE = AUDIO_FORMAT.sampleRate;
const CHANNELS = AUDIO_FORMAT.channels;
const BYTES_PER_FRAME = CHANNELS * 2;
const CHUNK_MS = 20;
const CHUNK_FRAMES = (RATE * CHUNK_MS) / 1000;
const CHUNK_BYTES = CHUNK_FRAMES * BYTES_PER_FRAME;
/** After a stalled event loop, at most this many chunks are written at once (the rest dropped). */
const MAX_CATCH_UP = 5;
/** ffmpeg's stdin holding more than this (it stalled): chunks are dropped, not queued. */
const MAX_STDIN_BYTES = 10 * CHUNK_BYTES;
/** Microphone sound kept for `heard`: the windows since the mark, at most this long. */
const HISTORY_MS = 20_000;
const HISTORY_WINDOWS = HISTORY_MS / CHUNK_MS;
/** A frequency counts as present in a 20 ms window at this level (a 0.5 tone gives ~0.5). */
export const HEARD_THRESHOLD = 0.1;
const TONE_AMPLITUDE = 0.5;
/** Tones are 20 Hz..20 kHz, at most a minute: `tone` is reachable from tests and benches only. */
const MAX_TONE_MS = 60_000;

interface Tone {
  hz: number;
  from: number;
  to: number;
}

/** One 20 ms window of the microphone as decoded, with the time it arrived. */
interface Window {
  /** Counts windows since the start: `heard` remembers how far it looked. */
  seq: number;
  at: number;
  pcm: Int16Array;
}

export interface Heard {
  /** performance.now() of the first 20 ms window since the mark with `hz` present, or null. */
  at: number | null;
  /** Level of `hz` over the last 100 ms, 0..1. */
  level: number;
}

export class TestbedAudio implements AudioDriver {
  readonly kind = 'testbed';
  readonly simulated = true;
  readonly cameraUnavailableReason = 'The testbed has no camera input';
  readonly cameraUnavailableCode = 'testbed' as const;
  private tones: Tone[] = [];
  /** Continuous phase of the generated sine across chunks, in frames. */
  private phase = 0;
  private history: Window[] = [];
  private windowSeq = 0;
  /**
   * Per frequency asked: the first window not looked at yet, and the hit once found, so a
   * bench polling `heard` every few ms analyses each window once.
   */
  private scans = new Map<string, { next: number; at: number | null }>();
  private partial = Buffer.alloc(0);
  /** Bytes of microphone PCM decoded since the start (tests read it to see the mic arrived). */
  micBytes = 0;

  /**
   * Plays `hz` for `ms` from now (a tone already playing is cut); returns performance.now() at
   * its start, the moment a listener's first chunk containing it is written.
   */
  tone(hz: number, ms: number): number {
    if (!(hz >= 20 && hz <= 20_000) || !(ms > 0 && ms <= MAX_TONE_MS)) {
      throw new RangeError('tone: 20..20000 Hz, 1..60000 ms');
    }
    const from = performance.now();
    this.tones = [{ hz, from, to: from + ms }];
    return from;
  }

  /** Forgets what the microphone carried so far: `heard` looks from now on. */
  mark(): number {
    this.history = [];
    this.scans.clear();
    return performance.now();
  }

  /** Whether (and when, since the last mark) the microphone carried `hz` at `threshold` or more. */
  heard(hz: number, threshold = HEARD_THRESHOLD): Heard {
    const key = `${hz}/${threshold}`;
    let scan = this.scans.get(key);
    if (!scan) {
      if (this.scans.size >= 32) this.scans.clear();
      scan = { next: 0, at: null };
      this.scans.set(key, scan);
    }
    for (const w of this.history) {
      if (scan.at !== null) break;
      if (w.seq < scan.next) continue;
      scan.next = w.seq + 1;
      if (toneLevel(w.pcm, RATE, CHANNELS, hz) >= threshold) scan.at = w.at;
    }
    const at = scan.at;
    const last = this.history.slice(-5);
    const joined = new Int16Array(last.reduce((n, w) => n + w.pcm.length, 0));
    let off = 0;
    for (const w of last) {
      joined.set(w.pcm, off);
      off += w.pcm.length;
    }
    return { at, level: toneLevel(joined, RATE, CHANNELS, hz) };
  }

  capture(): AudioCapture {
    return {
      args: ['-f', 's16le', '-ar', String(RATE), '-ac', String(CHANNELS), '-i', 'pipe:0'],
      feed: (stdin) => this.feed(stdin),
    };
  }

  playback(): AudioPlayback {
    return {
      args: ['-f', 's16le', '-ar', String(RATE), '-ac', String(CHANNELS), 'pipe:1'],
      drain: (stdout) => this.drain(stdout),
    };
  }

  async init(): Promise<void> {}

  async dispose(): Promise<void> {
    this.tones = [];
    this.history = [];
    this.scans.clear();
  }

  /** Writes 20 ms chunks in real time, paced by the clock rather than by the timer. */
  private feed(stdin: Writable): () => void {
    const start = performance.now();
    let written = 0;
    const tick = (): void => {
      const due = Math.floor((performance.now() - start) / CHUNK_MS) + 1;
      if (due - written > MAX_CATCH_UP) written = due - MAX_CATCH_UP;
      while (written < due) {
        written += 1;
        const chunk = this.chunk(performance.now());
        if (stdin.destroyed || !stdin.writable) return;
        if (stdin.writableLength > MAX_STDIN_BYTES) continue;
        stdin.write(chunk);
      }
    };
    // silence ahead of the first tick, so the encoder's first frame comes at once
    tick();
    const timer = setInterval(tick, CHUNK_MS / 2);
    return () => clearInterval(timer);
  }

  private chunk(now: number): Buffer {
    const out = Buffer.alloc(CHUNK_BYTES);
    this.tones = this.tones.filter((t) => t.to > now);
    const tone = this.tones.find((t) => t.from <= now);
    if (!tone) {
      this.phase = 0;
      return out;
    }
    const w = (2 * Math.PI * tone.hz) / RATE;
    for (let i = 0; i < CHUNK_FRAMES; i += 1) {
      const v = Math.round(TONE_AMPLITUDE * 32767 * Math.sin(w * (this.phase + i)));
      for (let c = 0; c < CHANNELS; c += 1) out.writeInt16LE(v, (i * CHANNELS + c) * 2);
    }
    this.phase = (this.phase + CHUNK_FRAMES) % RATE;
    return out;
  }

  /** Cuts the decoded microphone into 20 ms windows stamped with their arrival. */
  private drain(stdout: Readable): () => void {
    this.partial = Buffer.alloc(0);
    const onData = (data: Buffer): void => {
      const at = performance.now();
      this.micBytes += data.length;
      let buf = this.partial.length ? Buffer.concat([this.partial, data]) : data;
      while (buf.length >= CHUNK_BYTES) {
        this.history.push({ seq: this.windowSeq++, at, pcm: s16(buf.subarray(0, CHUNK_BYTES)) });
        buf = buf.subarray(CHUNK_BYTES);
      }
      this.partial = Buffer.from(buf);
      if (this.history.length > HISTORY_WINDOWS) {
        this.history.splice(0, this.history.length - HISTORY_WINDOWS);
      }
    };
    stdout.on('data', onData);
    return () => stdout.off('data', onData);
  }
}
