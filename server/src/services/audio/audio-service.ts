/**
 * The sound both ways (issue 14) as the console sees it: `GET /api/audio` and the `audio`
 * event of `/api/ws` (AudioState, protocol/src/audio.ts), and what the Janus plugin offers.
 *
 * `enable_mic` is read once, when the service starts: as on GL, a change made with
 * `set_param` takes effect at the next start of the device server.
 */
import { EventEmitter } from 'node:events';
import type { AudioState } from '@kvm/protocol';
import type { AudioDriver } from '../../drivers/audio/types';
import type { AudioHub, AudioPacket } from '../../media/audio-hub';
import type { MicSink } from '../../media/mic-sink';
import { watchedStateProvider, type StateProvider } from '../../ws/state-registry';

export interface AudioServiceOptions {
  driver: AudioDriver;
  hub: AudioHub;
  mic: MicSink;
  /** `enable_mic` of the system params as the server started. */
  enableMic: boolean;
  /** The gadget's webcam (services/camera): its state replaces the driver's camera fields. */
  camera?: AudioCamera | null;
}

/** The camera as the audio state shows it (services/camera/camera-service.ts). */
export interface AudioCamera {
  state(): AudioState['camera'];
  on(event: 'state', listener: () => void): unknown;
  off(event: 'state', listener: () => void): unknown;
}

export class AudioService extends EventEmitter<{ state: [AudioState] }> {
  private readonly driver: AudioDriver;
  private readonly enableMic: boolean;
  readonly hub: AudioHub;
  readonly mic: MicSink;

  constructor(opts: AudioServiceOptions) {
    super();
    this.driver = opts.driver;
    this.hub = opts.hub;
    this.mic = opts.mic;
    this.enableMic = opts.enableMic;
    const changed = (): void => {
      this.emit('state', this.getState());
    };
    this.hub.on('listeners', changed);
    this.mic.on('active', changed);
    // the sound card came or went (the gadget rebuilt, its UDC unbound)
    this.stopDriverWatch = this.driver.onChange?.(changed) ?? null;
    this.camera = opts.camera ?? null;
    this.camera?.on('state', changed);
    this.stopCameraWatch = () => this.camera?.off('state', changed);
  }

  private readonly camera: AudioCamera | null;
  private readonly stopCameraWatch: () => void;

  private readonly stopDriverWatch: (() => void) | null;

  getState(): AudioState {
    const available = this.soundAvailable();
    const micAvailable = this.micAvailable();
    const reason = this.driver.cameraUnavailableReason;
    return {
      available,
      reason: available ? null : (this.driver.unavailable ?? null),
      simulated: this.driver.simulated,
      listeners: this.hub.subscriberCount,
      mic: {
        enabled: this.enableMic,
        available: micAvailable,
        active: this.mic.active,
      },
      camera: this.camera?.state() ?? {
        available: reason === null,
        reason,
        code: reason === null ? null : this.driver.cameraUnavailableCode,
      },
    };
  }

  /** The target has sound to listen to (Janus `features.audio`). */
  soundAvailable(): boolean {
    return this.driver.capture() !== null;
  }

  /** The target takes a microphone (whether enabled or not). */
  micAvailable(): boolean {
    return this.driver.playback() !== null;
  }

  /** Janus `features`: `audio`, and `mic` = audio, enabled and available. */
  features(): { audio: boolean; mic: boolean } {
    const audio = this.soundAvailable();
    return { audio, mic: audio && this.enableMic && this.micAvailable() };
  }

  /** A viewer listens from now until the returned function is called. */
  listen(fn: (p: AudioPacket) => void): () => void {
    return this.hub.subscribe(fn);
  }

  /** One RTP packet of a viewer's microphone; refused unless `enable_mic` was on at start. */
  micRtp(sender: string, rtp: Buffer): void {
    if (!this.enableMic) return;
    this.mic.push(sender, rtp);
  }

  micGone(sender: string): void {
    this.mic.senderGone(sender);
  }

  provider(): StateProvider {
    return watchedStateProvider('audio', this);
  }

  async dispose(): Promise<void> {
    this.stopDriverWatch?.();
    this.stopCameraWatch();
    this.removeAllListeners();
    await Promise.all([this.hub.dispose(), this.mic.dispose()]);
  }
}
