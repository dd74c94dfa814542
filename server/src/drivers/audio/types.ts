/**
 * The sound of a target (issue 14, docs/drivers.md "Audio"): what the remote computer plays and
 * where the browser's microphone goes, as ffmpeg arguments. The media layer (media/audio-hub.ts,
 * media/mic-sink.ts) runs ffmpeg with them; drivers never run the encoder themselves.
 *
 * - QEMU (drivers/qemu/audio.ts): a PulseAudio server per data folder; the VM's intel-hda +
 *   hda-duplex plays into one null sink (captured from its monitor) and records from another
 *   (the microphone is played into it).
 * - testbed (drivers/testbed/audio.ts): a generated sound, said to be simulated everywhere it
 *   shows; a tone on demand for tests and benches; the microphone is decoded and measured.
 * - alsa (drivers/audio/alsa.ts): an ALSA card of the board; on the gadget target the card of the
 *   gadget's UAC2 function (the remote computer's USB sound card).
 * - none (drivers/audio/none.ts): no sound; the console says so.
 */
import type { Readable, Writable } from 'node:stream';
import type { CameraUnavailableCode } from '@kvm/protocol';

/** Where ffmpeg reads the remote computer's sound from. */
export interface AudioCapture {
  /** ffmpeg input arguments, up to and including `-i <input>` (e.g. `-f pulse ... -i sink.monitor`). */
  args: string[];
  /**
   * For an input on `pipe:0`: the driver writes PCM into ffmpeg's stdin until the returned
   * function is called (the testbed's generated sound).
   */
  feed?: (stdin: Writable) => () => void;
}

/** Where ffmpeg plays the decoded microphone to. */
export interface AudioPlayback {
  /** ffmpeg output arguments after the decoder (e.g. `-f pulse ... mic-sink`, or `-f s16le pipe:1`). */
  args: string[];
  /** For an output on `pipe:1`: the driver reads the PCM until the returned function is called. */
  drain?: (stdout: Readable) => () => void;
}

export interface AudioDriver {
  /** 'qemu' | 'testbed' | 'alsa' | 'none' */
  readonly kind: string;
  /** The sound is generated, not a computer's (the testbed). */
  readonly simulated: boolean;
  /** The remote computer's sound, null when the target has none (or it is not running now). */
  capture(): AudioCapture | null;
  /** The remote computer's microphone input, null when the target has none. */
  playback(): AudioPlayback | null;
  /** Why the browser's camera cannot reach the remote computer (null when it can). */
  readonly cameraUnavailableReason: string | null;
  /** The same as a code the console translates (null when the camera can be used). */
  readonly cameraUnavailableCode: CameraUnavailableCode | null;
  /** Why there is no sound now (the VM off, the sound card missing), or null; absent: never said. */
  readonly unavailable?: string | null;
  /** Called when capture(), playback() or `unavailable` may have changed (optional). */
  onChange?(listener: () => void): () => void;
  init(): Promise<void>;
  dispose(): Promise<void>;
}
