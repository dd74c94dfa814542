/**
 * werift, loaded on first use. Loaded, it holds about 33 MB resident (its modules, then the
 * DTLS certificate), a third of an idle server: a device whose console uses direct H.264 or
 * is closed never needs it. The bundle keeps peer.ts and werift in a chunk of their own
 * (scripts/build.mjs `splitting`), so nothing of them is read before this import runs.
 *
 * Prewarm (`prewarmWebrtc`): at the first `/janus/ws` socket, so janus.js's create, attach and
 * features round trips overlap the load and the certificate, and the first `watch` finds both
 * ready. Not at login: the server's idle figure (bench/server.ts) is a logged-in console.
 */
import type { Logger } from '../log';
import type * as Peer from './peer';

export type PeerModule = typeof Peer;

let loading: Promise<PeerModule> | null = null;
let prewarmed = false;

/** peer.ts and werift; the same promise for every caller, a new try after a failure. */
export function loadPeerModule(): Promise<PeerModule> {
  loading ??= import('./peer').catch((err: unknown) => {
    loading = null;
    throw err;
  });
  return loading;
}

/** Loads werift and makes the DTLS certificate in the background (once per process). */
export function prewarmWebrtc(log: Logger): void {
  if (prewarmed) return;
  prewarmed = true;
  loadPeerModule()
    .then((peer) => peer.prewarmDtlsCertificate())
    .catch((err: unknown) => {
      prewarmed = false;
      log.warn({ err: String(err) }, 'janus: WebRTC prewarm failed');
    });
}

/** Whether werift is loaded or loading (tests). */
export function peerModuleRequested(): boolean {
  return loading !== null;
}
