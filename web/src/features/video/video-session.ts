/**
 * The console's one video session: the controller with the real clients (each loaded on first
 * use, so janus.js and the decoder code stay off the routes that never show video), fed by the
 * event socket, restarted when the connection to the device comes back. Hooks for React.
 */
import { useEffect, useState, useSyncExternalStore } from 'react';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import type { VideoMode } from '@kvm/protocol/enums';
import { api } from '../../lib/api';
import type { JanusAuthAnswer } from '../../lib/janus-stream';
import { getAuthToken, readStorage } from '../../lib/storage';
import { eventSocket, heartbeat } from '../connection/connection';
import { useConfig } from '../config/config-state';
import { setInputChannelSource } from '../input/input-session';
import { deriveStreamStatus, NO_SIGNAL_AFTER_MS, type StreamStatus } from './stream-status';
import {
  applyStreamer,
  applyTurn,
  fetchTurn,
  loadStreamer,
  sourceOnline,
  useStreamer,
} from './streamer-store';
import { VideoController, type VideoSnapshot, type WebRtcClient } from './video-controller';
import { isVideoMode, modeOf, modules, takePrefetched, type ConfigAnswer } from './video-prefetch';
import { FirstFramePreview } from './first-frame-preview';

/**
 * How long the console's chunks wait for the first client (prestartVideo), from its start: on
 * this project's 2-core machine the WebRTC answer went out 70-90 ms after the start with the
 * main thread to itself (250-280 ms with the console's chunks evaluated beside it); direct
 * H.264's worker waited 90-160 ms to start while the chunks were evaluated.
 */
export const SIGNALLING_FIRST_MS = 500;

/**
 * After the answer (direct H.264: the media hello), how long the console's chunks wait for the
 * preview's first frame: a warm encoder's came 40-70 ms after the answer here; a cold one's
 * takes longer, and the console does not wait for it.
 */
export const FIRST_FRAME_WAIT_MS = 150;

/** The remote screen's first frame before the console renders (VideoView ends it). */
export const firstFramePreview = new FirstFramePreview({
  document: () => document,
  stream: (track) => new MediaStream([track]),
});

/** The microphone track to send (features/audio registers it: video never imports audio). */
let micTrackSource: () => MediaStreamTrack | null = () => null;

export function setMicTrackSource(source: () => MediaStreamTrack | null): void {
  micTrackSource = source;
}

/** The camera track to send (features/audio/camera-capture.ts registers it). */
let cameraTrackSource: () => MediaStreamTrack | null = () => null;

export function setCameraTrackSource(source: () => MediaStreamTrack | null): void {
  cameraTrackSource = source;
}

export const videoController = new VideoController({
  createWebRtc: async () => {
    const { JanusStream, iceTransportPolicyFromQuery, janusCredentials, janusServerUrl } =
      modules.webrtc ?? (await import('../../lib/janus-stream'));
    return new JanusStream({
      serverUrl: () => janusServerUrl(window.location, getAuthToken()),
      credentials: async () =>
        janusCredentials(
          await (takePrefetched<JanusAuthAnswer>('/janus/auth') ??
            api.get<JanusAuthAnswer>('/janus/auth')),
          getAuthToken(),
        ),
      getTurn: fetchTurn,
      iceTransportPolicy: () => iceTransportPolicyFromQuery(window.location.search),
      orientation: () => useConfig.getState().config?.orientation ?? 0,
      micTrack: () => micTrackSource(),
      cameraTrack: () => cameraTrackSource(),
    });
  },
  createDirect: async () => {
    const { H264DirectStream, mediaSocketUrl } =
      modules.direct ?? (await import('../../lib/h264-direct'));
    return new H264DirectStream({ url: () => mediaSocketUrl(window.location, getAuthToken()) });
  },
  isSourceOnline: () => sourceOnline(useStreamer.getState().state),
});

setInputChannelSource(() => videoController.getSnapshot().webrtc?.inputChannel ?? null);

eventSocket.on('streamer', (event) => applyStreamer(event));
eventSocket.on('turn', (event) => applyTurn(event));
heartbeat.onReconnected(() => {
  void loadStreamer();
  videoController.reconnected();
});

/**
 * Starts the video client of the `video_mode` setting before the main page's code has loaded
 * and rendered (app/prestart.ts calls it once the login is known good on the console's route):
 * the Janus handshake, ICE and DTLS then run while React renders, not after it (issue 28 item
 * 2; docs/webrtc.md "First frame"). VideoView's start() with the same mode changes nothing;
 * its unmount stops the client as before. The setting as useRequestedVideoMode reads it.
 * WebRTC: settles once the client's signalling is done (signalled()), and the track shows in
 * the first frame preview until the view presents it.
 */
export async function prestartVideo(): Promise<void> {
  const stored = readStorage(STORAGE_KEYS.videoMode);
  // The clients' chunks, janus.js, the first session's requests and the config are on their
  // way already (video-prefetch.ts): the config's video_mode starts the client before the config
  // store's own answer re-renders the console; a config not read means the mode this browser
  // stored.
  const early = takePrefetched<ConfigAnswer>('/system/get_config');
  const config =
    early ??
    // config-store (with the schema's library) only when the prefetch did not read it
    import('../config/config-store')
      .then((m) => m.loadConfig())
      .then((c) => {
        if (!c) throw new Error('no config');
        return { config: c };
      });
  const mode = await config.then(modeOf).catch(() => (isVideoMode(stored) ? stored : 'webrtc'));
  if (videoController.getSnapshot().requestedMode) return;
  videoController.start(mode);
  previewFirstSource();
  await signalled(mode);
}

/**
 * Feeds the first frame preview (first-frame-preview.ts) the client's track or direct stream,
 * from the early start until the preview has shown and gone or the view mounted first.
 */
function previewFirstSource(): void {
  let off = (): void => undefined;
  const follow = (): void => {
    const { track, direct, mode } = videoController.getSnapshot();
    firstFramePreview.setSource(mode === 'webrtc' ? track : mode === 'direct_h264' ? direct : null);
    if (firstFramePreview.spent && !firstFramePreview.showing) off();
  };
  off = videoController.subscribe(follow);
  follow();
}

/**
 * The first client has the page's main thread before the console's chunks (prestart loads
 * them after this settles): settles once its signalling is done (WebRTC: the answer sent;
 * direct H.264: the media hello came) and the first frame preview has presented its first
 * frame (or shows none; FIRST_FRAME_WAIT_MS at most), the client failed, or
 * SIGNALLING_FIRST_MS passed.
 */
function signalled(mode: VideoMode): Promise<void> {
  return new Promise((resolve) => {
    let off = (): void => undefined;
    let offAnswered = (): void => undefined;
    let client: WebRtcClient | null = null;
    let waiting = false;
    const done = (): void => {
      clearTimeout(timer);
      off();
      offAnswered();
      resolve();
    };
    const timer = setTimeout(done, SIGNALLING_FIRST_MS);
    // then (WebRTC: ICE, DTLS and) the first frame in the preview, with the main thread to
    // themselves
    const firstFrame = (): void => {
      if (waiting) return;
      waiting = true;
      const bound = setTimeout(done, FIRST_FRAME_WAIT_MS);
      void firstFramePreview.firstFrame().then(() => {
        clearTimeout(bound);
        done();
      });
    };
    const check = (): void => {
      const snapshot = videoController.getSnapshot();
      const { webrtc, state } = snapshot;
      if (snapshot.mode !== mode || state === 'error' || state === 'stopped') return done();
      if (mode === 'direct_h264') {
        if (state === 'watching' || state === 'active') firstFrame();
        return;
      }
      if (webrtc && webrtc !== client) {
        offAnswered();
        client = webrtc;
        offAnswered = webrtc.on('answered', firstFrame);
      }
    };
    off = videoController.subscribe(check);
    check();
  });
}

/**
 * One part of the video snapshot (a field: a primitive, or an object the snapshot keeps): the
 * component renders again only when that part changes. The snapshot changes with every stream
 * info (fps, bitrate: each second); MainLayout, which reads only `state`, rendered the whole main
 * page again each time when it took the whole snapshot, and the status bar its 46 components.
 * There is no hook for the whole snapshot: every reader takes its parts.
 */
export function useVideoPart<T>(select: (snapshot: VideoSnapshot) => T): T {
  return useSyncExternalStore(videoController.subscribe, () =>
    select(videoController.getSnapshot()),
  );
}

/**
 * The `video_mode` setting: the server copy once loaded; if it cannot be read, the one this
 * browser remembers (SPEC 3 local key video_mode), else WebRTC. null while loading.
 */
export function useRequestedVideoMode(): VideoMode | null {
  const mode = useConfig((s) => s.config?.video_mode);
  const status = useConfig((s) => s.status);
  if (mode) return mode;
  if (status !== 'error') return null;
  const stored = readStorage(STORAGE_KEYS.videoMode);
  return isVideoMode(stored) ? stored : 'webrtc';
}

/** SPEC 2/4 status bar text state of the stream, re-evaluated when the 5 s rule expires. */
export function useStreamStatus(): StreamStatus {
  const heartbeatState = useSyncExternalStore(heartbeat.subscribe, heartbeat.getState);
  const clientState = useVideoPart((v) => v.state);
  const online = useStreamer((s) => sourceOnline(s.state));
  const signalLostAt = useStreamer((s) => s.signalLostAt);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (signalLostAt === null) return;
    const left = Math.max(0, signalLostAt + NO_SIGNAL_AFTER_MS - Date.now());
    const timer = setTimeout(() => setNow(Date.now()), left + 10);
    return () => clearTimeout(timer);
  }, [signalLostAt]);
  return deriveStreamStatus({
    connectionLost: heartbeatState === 'lost',
    clientState,
    sourceOnline: online,
    signalLostAt,
    now,
  });
}
