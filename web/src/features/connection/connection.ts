/**
 * The live connection of a logged-in console: one event socket and its heartbeat (SPEC 4).
 * Started by the protected shell, stopped when it unmounts. Later subsystems subscribe to
 * `eventSocket.on(type, ...)` once and re-open their own sockets in `heartbeat.onReconnected`.
 */
import { api, isAuthDenied } from '../../lib/api';
import { stripBase } from '../../lib/base';
import { EventSocket, eventSocketUrl } from '../../lib/event-socket';
import { Heartbeat, type AuthCheckOutcome } from '../../lib/heartbeat';
import { getAuthToken } from '../../lib/storage';
import { applyInfo } from '../device-info/info-store';
import { handleSessionLost } from '../session/session-actions';

/**
 * `?stream=1` makes this console a stream client: the server runs (pre-starts) the video encoder
 * while one is connected (wire-protocol.md 1.7). The pages with the remote screen want it; the
 * upgrading page does not.
 */
let streamWanted: boolean | null = null;

function wantsStream(): boolean {
  return streamWanted ?? !stripBase(window.location.pathname).startsWith('/upgrading');
}

export const eventSocket = new EventSocket({
  url: () => eventSocketUrl(window.location, getAuthToken(), wantsStream()),
});

/** Says whether the video view shows; a change re-opens a live socket with the new URL. */
export function setStreamWanted(wanted: boolean): void {
  const changed = wantsStream() !== wanted;
  streamWanted = wanted;
  const state = eventSocket.getState();
  if (changed && (state === 'open' || state === 'connecting')) eventSocket.connect();
}

export async function checkAuthOutcome(signal: AbortSignal): Promise<AuthCheckOutcome> {
  try {
    await api.get('/auth/check', { signal });
    return 'ok';
  } catch (err) {
    return isAuthDenied(err) ? 'denied' : 'failed';
  }
}

export const heartbeat = new Heartbeat({ socket: eventSocket, checkAuth: checkAuthOutcome });

eventSocket.on('info', applyInfo);

heartbeat.subscribe(() => {
  if (heartbeat.getState() !== 'denied') return;
  // SPEC 4/6: 401/403 while logged in means the session is lost.
  handleSessionLost();
});

let users = 0;

/** Starts the socket and heartbeat; returns the stop function. Reference-counted. */
export function startConnection(): () => void {
  users += 1;
  if (users === 1) {
    eventSocket.connect();
    heartbeat.start();
  }
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    users -= 1;
    if (users === 0) {
      heartbeat.stop();
      eventSocket.close();
    }
  };
}
