/**
 * What JanusStream says to the gateway and to janus.js, apart from the session's course: the
 * gateway URL, the ICE servers, the credentials, the features answer's sound and the answer's
 * SDP (wire-protocol.md 3, SPEC 7). Pure functions; the class is in janus-stream.ts.
 */
import type { TurnState } from '@kvm/protocol/streamer';
import { socketUrl } from './base';

export const USTREAMER_PLUGIN = 'janus.plugin.ustreamer';

/** `wss://host/janus/ws?auth_token=…` (WebSockets cannot carry the Token header). */
export function janusServerUrl(
  location: { protocol: string; host: string },
  token: string | null,
): string {
  const query = token ? `?auth_token=${encodeURIComponent(token)}` : '';
  return socketUrl(location, `/janus/ws${query}`);
}

/**
 * ICE servers from the TURN state (SPEC 7): one entry with every uri, with the credentials when
 * there are some. No uris: none (the gateway's features.ice.url may add one later).
 */
export function iceServersFromTurn(turn: TurnState | null | undefined): RTCIceServer[] {
  const uris = (turn?.uris ?? []).filter((u) => typeof u === 'string' && u !== '');
  if (uris.length === 0) return [];
  const server: RTCIceServer = { urls: uris };
  if (turn?.username) {
    server.username = turn.username;
    server.credential = turn.password;
  }
  return [server];
}

/** The page query that forces the relay: `?ice=relay`. */
export const ICE_QUERY_PARAM = 'ice';

/**
 * `?ice=relay` → 'relay': the peer connection gathers TURN relay candidates only, so the media
 * goes through the TURN server even where a direct path exists (tests of the relay path, users
 * behind networks that let only the relay through). Anything else → 'all'.
 */
export function iceTransportPolicyFromQuery(search: string): RTCIceTransportPolicy {
  return new URLSearchParams(search).get(ICE_QUERY_PARAM) === 'relay' ? 'relay' : 'all';
}

export function randomId(length: number): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < length; i += 1) out += chars.charAt(Math.floor(Math.random() * chars.length));
  return out;
}

export function errorText(error: unknown): string {
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.message;
  return 'Unknown error';
}

/** What the gateway's `features` answer says about sound (wire-protocol.md 3.2). */
export interface GatewayFeatures {
  audio: boolean;
  mic: boolean;
}

/** PiKVM's customizeSdp: the answer asks for stereo Opus (the offer's sound is stereo). */
export function stereoOpus(sdp: string): string {
  return sdp.includes('stereo=1') ? sdp : sdp.replace('useinbandfec=1', 'useinbandfec=1;stereo=1');
}

/** Janus `token` / `apisecret` for janus.js; absent members are not sent. */
export interface JanusCredentials {
  token?: string;
  apisecret?: string;
}

/** `GET /api/janus/auth` (docs/api.md). */
export interface JanusAuthAnswer {
  apisecret: string | null;
  token_auth: boolean;
}

/** What janus.js is given: the secret when the gateway has one, the session token when asked. */
export function janusCredentials(answer: JanusAuthAnswer, token: string | null): JanusCredentials {
  return {
    ...(answer.apisecret !== null ? { apisecret: answer.apisecret } : {}),
    ...(answer.token_auth && token ? { token } : {}),
  };
}
