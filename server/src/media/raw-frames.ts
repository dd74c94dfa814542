/**
 * The video hub's raw subscribers (the JPEG path, the OCR) and where their frames come from:
 * - a `frames` source: its own frames, one buffer shared with the H.264 encoder and given back
 *   to the source (RawFrame.release) once every consumer let go of it;
 * - an `ffmpeg-input` source: frames decoded from the hub's H.264 (media/h264-decoder.ts), one
 *   decoder of the encoder's size while a subscriber is there. A new decoder is primed with
 *   the cached GOP (the references it needs; only its newest picture is handed on).
 * A subscriber that throws is unsubscribed; it throws nothing back into the source.
 */
import type { Logger } from '../log';
import type { RawFrame } from '../drivers/video/types';
import { H264Decoder, type DecoderOptions } from './h264-decoder';
import type { AccessUnit } from './types';

export interface RawFramesHooks {
  /** The subscribers changed without the hub asking (one threw and was removed). */
  changed(): void;
  /** The units since the last key frame (a new decoder's references). */
  cachedGop(): AccessUnit[];
  /** The decoder needs a key frame the cache does not hold. */
  requestKeyFrame(): void;
  /** A key unit of the running encoder came out (so one is not on its way anyway). */
  encoderOnline(): boolean;
}

export class RawFrames {
  private readonly subs = new Set<(frame: RawFrame) => void>();
  private decoder: H264Decoder | null = null;

  constructor(
    private readonly log: Logger,
    private readonly hooks: RawFramesHooks,
    private readonly decoderOpts: DecoderOptions = {},
  ) {}

  get size(): number {
    return this.subs.size;
  }

  add(onFrame: (frame: RawFrame) => void): void {
    this.subs.add(onFrame);
  }

  /** false: it was not subscribed. */
  remove(onFrame: (frame: RawFrame) => void): boolean {
    return this.subs.delete(onFrame);
  }

  clear(): void {
    this.subs.clear();
  }

  /**
   * `frame` to every subscriber and to `encode` when given, one buffer for all: back to its
   * source when the last one lets go. With no subscriber it goes to `encode` as it is.
   */
  share(frame: RawFrame, encode: ((frame: RawFrame) => void) | null): void {
    if (this.subs.size === 0) {
      if (encode) encode(frame);
      else frame.release?.();
      return;
    }
    let left = this.subs.size + (encode ? 1 : 0);
    const original = frame.release;
    const share = (): RawFrame => {
      let done = false;
      return {
        ...frame,
        release: () => {
          if (done) return;
          done = true;
          left -= 1;
          if (left === 0) original?.();
        },
      };
    };
    for (const sub of [...this.subs]) {
      const mine = share();
      try {
        sub(mine);
      } catch (err) {
        mine.release?.();
        this.log.warn({ err }, 'raw frame subscriber failed; unsubscribed');
        if (this.subs.delete(sub)) this.hooks.changed();
      }
    }
    if (encode) encode(share());
  }

  /** The decoder's ffmpeg, or null. */
  get decoderPid(): number | null {
    return this.decoder?.pid ?? null;
  }

  /** An input source's encoder runs at this size: a decoder of it while subscribers are there. */
  ensureDecoder(width: number, height: number): void {
    const old = this.decoder;
    if (this.subs.size === 0 || width <= 0 || height <= 0) return;
    if (old && old.width === width && old.height === height) return;
    this.stopDecoder();
    const dec = new H264Decoder(width, height, this.decoderOpts);
    this.decoder = dec;
    dec.on('frame', (frame) => this.share(frame, null));
    dec.on('started', () => {
      const units = this.hooks.cachedGop();
      units.forEach((u, i) => dec.write(u, i === units.length - 1));
      if (dec.waitingForKey && this.hooks.encoderOnline()) this.hooks.requestKeyFrame();
    });
    dec.start().catch((err: unknown) => this.log.error({ err }, 'decoder cannot start'));
  }

  /** A unit of the input source's encoder. `gopZero`: no key frame comes by itself. */
  decode(unit: AccessUnit, gopZero: boolean): void {
    // behind by DECODER_MAX_IN_FLIGHT, it waits for a key unit
    if (this.decoder?.write(unit) === 'busy' && gopZero) this.hooks.requestKeyFrame();
  }

  /** Stops the decoder (no subscriber left, a new size, shutdown); resolves once it is gone. */
  stopDecoder(): Promise<void> | null {
    const dec = this.decoder;
    if (!dec) return null;
    this.decoder = null;
    dec.removeAllListeners();
    return dec
      .stop()
      .catch((err: unknown) => this.log.warn({ err }, 'decoder did not stop cleanly'));
  }
}
