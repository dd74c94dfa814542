/**
 * The console's sound (issue 14): what the device says (GET /api/audio, the `audio` event),
 * what the WebRTC session negotiated, and this browser's choices, in one store; the microphone
 * capture and its meter follow them. Plain module + zustand; the components only read and call.
 *
 * Choices and where they are kept:
 * - volume level and mute: this browser (local keys `kvm_audio_volume`, `kvm_audio_muted`).
 * - microphone on/off: SPEC 3 has `mic_on` both as a browser key and in the server config. The
 *   microphone is this browser's device and permission, so the BROWSER key wins when it is set;
 *   the server config's `mic_on` is the default for a browser that never chose. A change writes
 *   both.
 * - camera on/off: the browser key `cam_on` only.
 * - the muted-panel tip: `got_muted_panel_tip` in the server config, shown once per user.
 *
 * Mute silences both ways: the remote sound and the microphone track (SPEC 4: "the microphone
 * track follows the muted setting"; the track is disabled, nothing is renegotiated).
 */
import { create } from 'zustand';
import type { AudioState } from '@kvm/protocol/audio';
import { PRODUCT_STORAGE_PREFIX, STORAGE_KEYS } from '@kvm/protocol/constants';
import type { VideoMode } from '@kvm/protocol/enums';
import { api } from '../../lib/api';
import type { GatewayFeatures } from '../../lib/janus-stream';
import { readStorage, writeStorage } from '../../lib/storage';
import { saveConfig, useConfig } from '../config/config-store';
import {
  captureMicrophone,
  MicCaptureError,
  type MediaDevicesLike,
  type MicError,
} from './mic-capture';
import { MicMeter, type MeterContextLike } from './mic-meter';
import { RemoteAudioPlayer } from './remote-audio';

/** Browser keys of this feature beyond SPEC 3's list (the level is remembered per browser). */
export const AUDIO_STORAGE_KEYS = {
  volume: `${PRODUCT_STORAGE_PREFIX}audio_volume`,
  muted: `${PRODUCT_STORAGE_PREFIX}audio_muted`,
} as const;

/** Where the microphone capture is. */
export type MicCapture = 'idle' | 'starting' | 'on' | MicError;

export interface AudioStoreState {
  /** GET /api/audio or the `audio` event; null until one arrived. */
  device: AudioState | null;
  /** The running video client (direct H.264 carries no sound); null while none runs. */
  mode: VideoMode | null;
  /** Direct H.264 runs because WebRTC could not be reached (the setting says WebRTC). */
  fallback: boolean;
  /** The gateway's features answer of the current WebRTC session. */
  features: GatewayFeatures | null;
  /** A remote sound track is being received. */
  receiving: boolean;
  /** 0..1 */
  volume: number;
  muted: boolean;
  /** The browser refused to play sound before a user gesture. */
  autoplayBlocked: boolean;
  /** This browser's microphone choice (see the header). */
  micOn: boolean;
  micCapture: MicCapture;
  /** 0..1, the meter; 0 when off or muted. */
  micLevel: number;
  /** The microphone enable flow (set_param, restart, reconnection) is running. */
  enabling: boolean;
  camOn: boolean;
  /** The muted-panel tip was closed on this page (the server config remembers it for good). */
  tipClosed: boolean;
}

function storedVolume(): number {
  const raw = readStorage(AUDIO_STORAGE_KEYS.volume);
  const value = raw === null ? NaN : Number(raw);
  return Number.isFinite(value) && value >= 0 && value <= 1 ? value : 1;
}

/** The browser key if set ('true'/'false'), else null. */
function storedFlag(key: string): boolean | null {
  const raw = readStorage(key);
  return raw === 'true' ? true : raw === 'false' ? false : null;
}

function initialState(): AudioStoreState {
  return {
    device: null,
    mode: null,
    fallback: false,
    features: null,
    receiving: false,
    volume: storedVolume(),
    muted: storedFlag(AUDIO_STORAGE_KEYS.muted) ?? false,
    autoplayBlocked: false,
    micOn: storedFlag(STORAGE_KEYS.micOn) ?? false,
    micCapture: 'idle',
    micLevel: 0,
    enabling: false,
    camOn: storedFlag(STORAGE_KEYS.camOn) ?? false,
    tipClosed: false,
  };
}

export const useAudio = create<AudioStoreState>(() => initialState());

// ---- derived states (what the controls show) ----------------------------------------------

/** What the volume control shows. */
export type VolumeStatus = 'unknown' | 'direct' | 'unavailable' | 'blocked' | 'muted' | 'on';

export function volumeStatus(s: AudioStoreState): VolumeStatus {
  if (s.mode === 'direct_h264') return 'direct';
  if (s.device && !s.device.available) return 'unavailable';
  if (s.features && !s.features.audio) return 'unavailable';
  if (s.muted) return 'muted';
  if (!s.device && !s.features) return 'unknown';
  return s.autoplayBlocked ? 'blocked' : 'on';
}

/** What the microphone control shows. */
export type MicStatus =
  | 'unknown'
  | 'direct'
  | 'unavailable'
  | 'disabled'
  | 'enabling'
  | 'off'
  | 'starting'
  | 'on'
  | MicError;

export function micStatus(s: AudioStoreState): MicStatus {
  if (s.enabling) return 'enabling';
  if (s.mode === 'direct_h264') return 'direct';
  if (!s.device) return 'unknown';
  if (!s.device.available || !s.device.mic.available) return 'unavailable';
  if (!s.device.mic.enabled) return 'disabled';
  if (!s.micOn) return 'off';
  return s.micCapture === 'idle' ? 'starting' : s.micCapture;
}

/** The muted-panel tip: sound is there but muted (by the user or the browser), never shown before. */
export function showMutedTip(s: AudioStoreState, gotTip: boolean | undefined): boolean {
  if (gotTip !== false || s.tipClosed || !s.receiving) return false;
  const status = volumeStatus(s);
  return status === 'muted' || status === 'blocked';
}

// ---- device state ---------------------------------------------------------------------------

export function applyAudio(state: AudioState | null | undefined): void {
  if (state && typeof state.available === 'boolean' && state.mic && state.camera) {
    useAudio.setState({ device: state });
  }
}

/** GET /api/audio (also after a reconnection: the event's first burst may come first). */
export async function loadAudio(): Promise<AudioState | null> {
  try {
    applyAudio(await api.get<AudioState>('/audio'));
  } catch {
    // The event says it too.
  }
  return useAudio.getState().device;
}

// ---- the remote sound -----------------------------------------------------------------------

export const remoteAudio = new RemoteAudioPlayer({
  onBlocked: (autoplayBlocked) => useAudio.setState({ autoplayBlocked }),
});

export function setVolume(volume: number): void {
  const value = Math.min(1, Math.max(0, volume));
  writeStorage(AUDIO_STORAGE_KEYS.volume, String(value));
  remoteAudio.setVolume(value);
  useAudio.setState({ volume: value });
}

export function setMuted(muted: boolean): void {
  writeStorage(AUDIO_STORAGE_KEYS.muted, String(muted));
  useAudio.setState({ muted });
  remoteAudio.setMuted(muted);
  if (!muted) closeMutedTip();
}

/** The volume button: sound the browser held back plays now (this click is the gesture); else mute toggles. */
export function toggleSound(): void {
  const s = useAudio.getState();
  if (!s.muted && s.autoplayBlocked) {
    remoteAudio.unblock();
    closeMutedTip();
    return;
  }
  // Muted by the user's own click: no tip telling them how (it stays for a muted page load).
  if (!s.muted) useAudio.setState({ tipClosed: true });
  setMuted(!s.muted);
}

/** Closes the muted-panel tip and remembers it in the server config (once per user). */
export function closeMutedTip(): void {
  if (useAudio.getState().tipClosed) return;
  useAudio.setState({ tipClosed: true });
  if (useConfig.getState().config?.got_muted_panel_tip === false) {
    saveConfig({ got_muted_panel_tip: true }).catch(() => undefined);
  }
}

// ---- the microphone ------------------------------------------------------------------------

export interface AudioDeps {
  media: () => MediaDevicesLike | undefined;
  meterContext?: () => MeterContextLike | null;
}

let deps: AudioDeps = {
  media: () => globalThis.navigator?.mediaDevices,
};

let micStream: MediaStream | null = null;
/** Bumped on every start and stop: a capture that resolves late after a stop is dropped. */
let micRound = 0;
let micListener: () => void = () => undefined;
let meter = new MicMeter((micLevel) => useAudio.setState({ micLevel }), deps.meterContext);

/** The microphone track to send (the WebRTC session reads it at each watch and answer). */
export function currentMicTrack(): MediaStreamTrack | null {
  return micStream?.getAudioTracks()[0] ?? null;
}

/** Called when currentMicTrack() changes (the session swaps it in or renegotiates). */
export function onMicTrackChange(listener: () => void): void {
  micListener = listener;
}

/**
 * The browser key wins when set; else the server config's mic_on (see the header). Called
 * when the config has loaded.
 */
export function adoptServerMicOn(micOn: boolean | undefined): void {
  if (storedFlag(STORAGE_KEYS.micOn) !== null || typeof micOn !== 'boolean') return;
  if (useAudio.getState().micOn !== micOn) useAudio.setState({ micOn, micCapture: 'idle' });
}

/** The microphone button: on or off (an error is cleared: on again tries again). */
export function setMicOn(micOn: boolean): void {
  writeStorage(STORAGE_KEYS.micOn, String(micOn));
  useAudio.setState({ micOn, micCapture: 'idle' });
  if (useConfig.getState().config && useConfig.getState().config?.mic_on !== micOn) {
    saveConfig({ mic_on: micOn }).catch(() => undefined);
  }
}

export function setCamOn(camOn: boolean): void {
  writeStorage(STORAGE_KEYS.camOn, String(camOn));
  useAudio.setState({ camOn });
}

function wantsMic(s: AudioStoreState): boolean {
  return (
    s.micOn &&
    s.mode === 'webrtc' &&
    s.device?.available === true &&
    s.device.mic.available &&
    s.device.mic.enabled &&
    !s.enabling
  );
}

/** Brings the capture in line with the store: started, stopped, its track muted or not. */
function syncMic(): void {
  const s = useAudio.getState();
  const want = wantsMic(s);
  if (want && !micStream && s.micCapture === 'idle') {
    void startMic();
  } else if (!want && (micStream || s.micCapture === 'starting')) {
    stopMic();
  }
  const track = currentMicTrack();
  if (track && track.enabled === s.muted) track.enabled = !s.muted;
}

async function startMic(): Promise<void> {
  micRound += 1;
  const round = micRound;
  useAudio.setState({ micCapture: 'starting' });
  let stream: MediaStream;
  try {
    stream = await captureMicrophone(deps.media());
  } catch (err) {
    if (round === micRound) {
      useAudio.setState({ micCapture: err instanceof MicCaptureError ? err.reason : 'failed' });
    }
    return;
  }
  if (round !== micRound) {
    for (const track of stream.getTracks()) track.stop();
    return;
  }
  micStream = stream;
  const track = currentMicTrack();
  if (track) track.enabled = !useAudio.getState().muted;
  meter.start(stream);
  useAudio.setState({ micCapture: 'on' });
  micListener();
}

function stopMic(): void {
  micRound += 1;
  const stream = micStream;
  micStream = null;
  meter.stop();
  for (const track of stream?.getTracks() ?? []) track.stop();
  if (useAudio.getState().micCapture !== 'idle' && !isMicError(useAudio.getState().micCapture)) {
    useAudio.setState({ micCapture: 'idle' });
  }
  if (stream) micListener();
}

function isMicError(capture: MicCapture): boolean {
  return capture !== 'idle' && capture !== 'starting' && capture !== 'on';
}

useAudio.subscribe(syncMic);

// ---- for tests ------------------------------------------------------------------------------

export function setAudioDepsForTests(next: AudioDeps): void {
  deps = next;
  meter.stop();
  meter = new MicMeter((micLevel) => useAudio.setState({ micLevel }), next.meterContext);
}

export function resetAudioForTests(): void {
  stopMic();
  micListener = () => undefined;
  remoteAudio.dispose();
  useAudio.setState(initialState(), true);
}
