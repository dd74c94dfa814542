/**
 * Sound through an ALSA card of the board (issue 24, docs/drivers.md "Audio (ALSA)"): on the
 * gadget target the card the kernel makes for the composite gadget's UAC2 function (id
 * `UAC2Gadget`). The remote computer plays into the USB sound card it sees; the board records
 * that from the card's capture side (`-f alsa -i hw:UAC2Gadget,0`) and the audio hub sends it
 * as Opus. The browser's microphone, decoded, is played into the card's playback side, which the
 * remote computer records as its microphone.
 *
 * The gadget's card exists only while the gadget is bound (the kernel makes it at bind and
 * removes it at unbind): capture() and playback() are null while it is missing (the gadget being
 * rebuilt, the UDC unbound, the function left out), and `unavailable` says why. An ffmpeg
 * reading a card that goes away ends with an error; the hub starts it again with the same
 * device name, which is the card's id and survives the rebuild.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AUDIO_FORMAT, type CameraUnavailableCode } from '@kvm/protocol';
import type { AudioCapture, AudioDriver, AudioPlayback } from './types';

/** What the driver needs of the gadget when the card is the gadget's (platform/gadget). */
export interface AlsaGadgetSound {
  soundOnline(): boolean;
  soundProblem(): string | null;
  /** Called when the gadget was rebuilt or its UDC/problems changed. */
  onChange(listener: () => void): () => void;
}

export interface AlsaAudioOptions {
  /** The ALSA card's id (`/proc/asound/cards`, e.g. UAC2Gadget). */
  card: string;
  /** The PCM device on that card. */
  device: number;
  /** procfs's ALSA folder: `<proc>/<card>` exists while the card does. */
  proc: string;
  /** The gadget whose UAC2 function makes the card; null: a card of its own (a USB dongle). */
  gadget: AlsaGadgetSound | null;
}

/** ffmpeg's ALSA input of the card (pure). */
export function alsaCaptureArgs(device: string): string[] {
  return [
    '-f',
    'alsa',
    '-channels',
    String(AUDIO_FORMAT.channels),
    '-sample_rate',
    String(AUDIO_FORMAT.sampleRate),
    '-i',
    device,
  ];
}

/** ffmpeg's ALSA output to the card, after the decoder (pure). */
export function alsaPlaybackArgs(device: string): string[] {
  return [
    '-c:a',
    'pcm_s16le',
    '-ar',
    String(AUDIO_FORMAT.sampleRate),
    '-ac',
    String(AUDIO_FORMAT.channels),
    '-f',
    'alsa',
    device,
  ];
}

export class AlsaAudio implements AudioDriver {
  readonly kind = 'alsa';
  readonly simulated = false;
  // issue 24 item 5 (the UVC camera) sets these when the gadget has its camera function
  readonly cameraUnavailableReason: string | null = 'This device has no camera input';
  readonly cameraUnavailableCode: CameraUnavailableCode | null = 'no_camera_input';
  private readonly listeners = new Set<() => void>();
  private unsubscribe: (() => void) | null = null;
  private lastUnavailable: string | null | undefined = undefined;

  constructor(private readonly opts: AlsaAudioOptions) {}

  /** The ALSA name ffmpeg opens, `hw:<card>,<device>`. */
  get deviceName(): string {
    return `hw:${this.opts.card},${this.opts.device}`;
  }

  /** Why there is no sound now (no card), or null. */
  get unavailable(): string | null {
    const gadget = this.opts.gadget;
    if (gadget && !gadget.soundOnline()) {
      return gadget.soundProblem() ?? 'The USB sound function is not bound';
    }
    if (!existsSync(join(this.opts.proc, this.opts.card))) {
      return gadget
        ? `The gadget's sound card ${this.opts.card} is missing (not in ${this.opts.proc})`
        : `The sound card ${this.opts.card} is missing (not in ${this.opts.proc})`;
    }
    return null;
  }

  capture(): AudioCapture | null {
    if (this.unavailable !== null) return null;
    return { args: alsaCaptureArgs(this.deviceName) };
  }

  playback(): AudioPlayback | null {
    if (this.unavailable !== null) return null;
    return { args: alsaPlaybackArgs(this.deviceName) };
  }

  /** Called when `unavailable` may have changed (the gadget rebuilt, bound or unbound). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async init(): Promise<void> {
    this.unsubscribe = this.opts.gadget?.onChange(() => this.changed()) ?? null;
  }

  async dispose(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.listeners.clear();
  }

  private changed(): void {
    const now = this.unavailable;
    if (now === this.lastUnavailable) return;
    this.lastUnavailable = now;
    for (const l of this.listeners) l();
  }
}
