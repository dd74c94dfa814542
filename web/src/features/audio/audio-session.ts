/**
 * Wires the sound store to the rest of the console: the device's `audio` event and a reload
 * after every reconnection, the running video client (its remote sound track and features),
 * the server config's mic_on, and the microphone track back into the WebRTC session.
 * Imported for its effects by the controls (status bar, settings, the remote audio element).
 */
import type { AudioState } from '@kvm/protocol/audio';
import { api } from '../../lib/api';
import { eventSocket, heartbeat } from '../connection/connection';
import { rebootDevice } from '../system/system-api';
import { useConfig } from '../config/config-store';
import { setCameraTrackSource, setMicTrackSource, videoController } from '../video/video-session';
import { cameraCapture } from './camera-capture';
import type { WebRtcClient } from '../video/video-controller';
import {
  adoptServerMicOn,
  applyAudio,
  currentMicTrack,
  loadAudio,
  onMicTrackChange,
  remoteAudio,
  useAudio,
} from './audio-store';
import type { MicEnableDeps } from './mic-enable';

declare module '../../lib/event-socket' {
  interface EventPayloads {
    audio: AudioState;
  }
}

eventSocket.on('audio', applyAudio);
heartbeat.onReconnected(() => void loadAudio());

let client: WebRtcClient | null = null;
let offClient: () => void = () => undefined;

function followVideo(): void {
  const snapshot = videoController.getSnapshot();
  const next = snapshot.mode === 'webrtc' ? snapshot.webrtc : null;
  if (useAudio.getState().mode !== snapshot.mode) useAudio.setState({ mode: snapshot.mode });
  if (useAudio.getState().fallback !== snapshot.fallback) {
    useAudio.setState({ fallback: snapshot.fallback });
  }
  if (next === client) return;
  offClient();
  client = next;
  if (!next) {
    offClient = () => undefined;
    remoteAudio.setTrack(null);
    useAudio.setState({ features: null, receiving: false });
    return;
  }
  const offs = [
    next.on('audioTrack', (track) => {
      remoteAudio.setTrack(track);
      useAudio.setState({ receiving: track !== null });
    }),
    next.on('features', (features) => useAudio.setState({ features })),
  ];
  offClient = () => offs.forEach((off) => off());
  const track = next.getAudioTrack();
  remoteAudio.setTrack(track);
  useAudio.setState({ features: next.getFeatures(), receiving: track !== null });
}

videoController.subscribe(followVideo);
followVideo();

setMicTrackSource(currentMicTrack);
onMicTrackChange(() => client?.micChanged());

// the camera: captured while it is on and the device's webcam can take it (issue 24)
setCameraTrackSource(() => cameraCapture.track());
cameraCapture.onChange(() => client?.cameraChanged());
const syncCamera = (): void => {
  const s = useAudio.getState();
  cameraCapture.sync(s.camOn && s.device?.camera.available === true);
};
useAudio.subscribe(syncCamera);
syncCamera();

useConfig.subscribe((s) => adoptServerMicOn(s.config?.mic_on));
adoptServerMicOn(useConfig.getState().config?.mic_on);

let loaded = false;
/** The first control that shows reads the state once (the event keeps it current). */
export function ensureAudioLoaded(): void {
  if (loaded) return;
  loaded = true;
  void loadAudio();
}

/**
 * The real calls of the microphone enable flow (SPEC 4): the event socket's close marks the
 * restart, the heartbeat's reconnection (after it) the console being back.
 */
export function micEnableFlow(): { deps: MicEnableDeps; done: () => void } {
  let closed = false;
  let back = false;
  let resolveAway: () => void = () => undefined;
  let resolveBack: () => void = () => undefined;
  const wentAway = new Promise<void>((resolve) => {
    resolveAway = resolve;
  });
  const backAgain = new Promise<void>((resolve) => {
    resolveBack = resolve;
  });
  const offClose = eventSocket.onClose(() => {
    closed = true;
    back = false;
    resolveAway();
  });
  const offBack = heartbeat.onReconnected(() => {
    back = true;
    resolveBack();
  });
  return {
    deps: {
      setParam: () => api.post('/system/set_param', { query: { enable_mic: 1 } }),
      reboot: rebootDevice,
      micEnabled: async () => {
        const state = await api.get<AudioState>('/audio', { timeoutMs: 3000 });
        applyAudio(state);
        return state.mic.enabled;
      },
      wentAway,
      // The socket never closed (nothing to wait for) or has been re-created since.
      reconnected: () => (!closed || back ? Promise.resolve() : backAgain),
    },
    done: () => {
      offClose();
      offBack();
    },
  };
}
