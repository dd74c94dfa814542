/**
 * The first video session's own requests and chunks, started by app/prestart.ts as soon as the
 * login is known good (issue 28 item 2), beside the console's chunks and the config request
 * instead of after them: the WebRTC client's chunk and janus.js, `/janus/auth` and the TURN
 * state, or direct H.264's chunk and worker. The first WebRTC session takes the answers
 * (takePrefetched); any later one asks again (the TURN credentials expire). Kept small: it is
 * part of the entry bundle. Measured by `npm run bench -- video --ttff` (docs/webrtc.md "First
 * frame").
 */
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { VIDEO_MODES, type VideoMode } from '@kvm/protocol/enums';
import { api } from '../../lib/api';
import type * as H264DirectModule from '../../lib/h264-direct';
import type * as JanusStreamModule from '../../lib/janus-stream';
import { readStorage } from '../../lib/storage';

/** A TURN answer that is slower than this does not hold the video back. */
export const TURN_TIMEOUT_MS = 3_000;

/** GET /api/system/get_config's answer as far as the video's start reads it. */
export interface ConfigAnswer {
  config?: { video_mode?: unknown } | null;
}

export function isVideoMode(value: unknown): value is VideoMode {
  return (VIDEO_MODES as readonly unknown[]).includes(value);
}

/** The config's video_mode; a config without it means the default (as normalizeUserConfig). */
export function modeOf(answer: ConfigAnswer | null): VideoMode {
  const mode = answer?.config?.video_mode;
  return isVideoMode(mode) ? mode : 'webrtc';
}

/** An answer older than this is asked again (a session that starts late). */
const FRESH_MS = 10_000;

interface Prefetched {
  at: number;
  answers: Map<string, Promise<unknown>>;
}

let prefetched: Prefetched | null = null;

const noop = (): void => undefined;

/**
 * The clients' modules once loaded: the session creates its client from them at once, not after
 * an import() of a module that is in already (that waited 80-100 ms for the main thread while
 * React rendered the console).
 */
export const modules: {
  webrtc: typeof JanusStreamModule | null;
  direct: typeof H264DirectModule | null;
} = { webrtc: null, direct: null };

/**
 * Starts the first session's loads: the config (its `video_mode` picks the client) and the
 * client of the mode this browser last used (stored `video_mode`): both when it has none.
 * Returns the config's answer: that it came proves the login good.
 */
export function prefetchVideo(now = Date.now()): Promise<unknown> {
  const stored = readStorage(STORAGE_KEYS.videoMode);
  const answers = new Map<string, Promise<unknown>>();
  const ask = (path: string, timeoutMs?: number): Promise<unknown> => {
    const answer = api.get<unknown>(path, timeoutMs ? { timeoutMs } : undefined);
    answer.catch(() => undefined);
    answers.set(path, answer);
    return answer;
  };
  // prestartVideo reads it; the config store asks on its own
  const config = ask('/system/get_config');
  // offline: the session's own start loads again
  if (stored !== 'webrtc') {
    const direct = import('../../lib/h264-direct').then((m) => (modules.direct = m));
    // Direct H.264's worker starts while the page's main thread is still free: its start needs
    // that thread, and beside the console's chunks it came 90-160 ms late.
    const wanted =
      stored === 'direct_h264'
        ? true
        : config.then((c) => modeOf(c as ConfigAnswer | null) === 'direct_h264');
    Promise.all([direct, wanted]).then(([m, yes]) => yes && m.sharedDirectWorker(), noop);
  }
  if (stored !== 'direct_h264') {
    import('../../lib/janus-stream').then((m) => (modules.webrtc = m), noop);
    // janus.js and the adapter beside the loader, not after it has run
    void import('janus-gateway').catch(() => undefined);
    void import('webrtc-adapter').catch(() => undefined);
    void import('../../lib/janus-loader').then((m) => m.loadJanusRuntime()).catch(() => undefined);
    ask('/janus/auth');
    ask('/turn/get_turn', TURN_TIMEOUT_MS);
  }
  prefetched = { at: now, answers };
  return config;
}

/** The prefetched answer of `path` once (null: none, taken, or too old): the caller asks itself. */
export function takePrefetched<T>(path: string, now = Date.now()): Promise<T> | null {
  if (!prefetched || now - prefetched.at > FRESH_MS) return null;
  const answer = prefetched.answers.get(path) ?? null;
  prefetched.answers.delete(path);
  return answer as Promise<T> | null;
}
