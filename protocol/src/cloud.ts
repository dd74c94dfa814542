/**
 * The cloud (docs/cloud.md): what the device, the fleet server and the console share. Three
 * contracts live here:
 * - the device's own cloud panel API (`/api/cloud/*`), its state and validation (SPEC 4, 5);
 * - the fleet's HTTP API (`/cloud-basic/v1/*`, SPEC 7's base prefix, 30 s client timeout);
 * - the agent socket between a device and a fleet replica (`/cloud-basic/v1/agent`), JSON
 *   control frames and binary stream frames.
 * Nothing here imports node:* or touches the DOM.
 */

// ---- constants ---------------------------------------------------------------------------------

/** SPEC 7: the cloud calls' timeout. */
export const CLOUD_TIMEOUT_MS = 30_000;
/** The fleet's HTTP API prefix. */
export const FLEET_API = '/cloud-basic/v1';
/** The agent socket's path on a fleet replica. */
export const AGENT_PATH = `${FLEET_API}/agent`;
/** A device's console through the fleet: `/d/<deviceId>/...`, one host name, routed by path. */
export const CONSOLE_PATH_PREFIX = '/d/';
/** The bind code a device shows: 8 digits (as GL's dynamic code), valid 60 s, single use. */
export const BIND_CODE_DIGITS = 8;
export const BIND_CODE_TTL_S = 60;
/** Sign-up e-mail code: 6 digits (SPEC 5), valid 10 minutes, 5 tries. */
export const EMAIL_CODE_DIGITS = 6;
export const EMAIL_CODE_TTL_S = 600;
export const EMAIL_CODE_MAX_TRIES = 5;
/** Agent heartbeat: the device pings every 20 s; 60 s of silence ends the socket on both sides. */
export const AGENT_PING_MS = 20_000;
export const AGENT_DEAD_MS = 60_000;
/** Reconnect backoff of the agent: full jitter between 0 and min(max, base·2^n). */
export const AGENT_BACKOFF_BASE_MS = 500;
export const AGENT_BACKOFF_MAX_MS = 30_000;
/** The largest WebSocket message either side of the agent socket accepts. */
export const AGENT_MAX_FRAME = 1 << 20;
/** Streams (tunnelled requests and sockets) open at once on one agent socket. */
export const AGENT_MAX_STREAMS = 64;
/**
 * Per-stream flow control: a sender may have this many bytes unacknowledged; the receiver
 * acknowledges (`ack`) as it drains.
 */
export const AGENT_STREAM_WINDOW = 1 << 20;
/** Device secret: 32 random bytes, base64url (43 characters). */
export const DEVICE_SECRET_BYTES = 32;

// ---- the device's cloud panel (SPEC 4, 5) ------------------------------------------------------

/**
 * What the device's agent is doing:
 * - `disabled`: cloud off (the default; nothing leaves the device);
 * - `unbound`: on, no binding;
 * - `connecting` / `online` / `offline` (with `error`): bound, the agent socket's state;
 * - `revoked`: the fleet ended the binding; the device forgot its secret.
 */
export type CloudAgentState =
  'disabled' | 'unbound' | 'connecting' | 'online' | 'offline' | 'revoked';

export interface CloudStatus {
  enabled: boolean;
  bound: boolean;
  state: CloudAgentState;
  /** The fleet's URL (https://host[:port]); null before one is set. */
  url: string | null;
  /** SHA-256 fingerprint (hex, colon-separated) pinned at bind time when the fleet's certificate is not publicly trusted. */
  pinned: string | null;
  /** SPEC 4's binding info. */
  device: { id: string | null; mac: string; serial: string };
  account: { username: string; email: string } | null;
  bound_at: number | null;
  /** The replica the agent is connected to, when online. */
  replica: string | null;
  /** Why the agent is offline or the last bind failed. */
  error: string | null;
}

/** `POST /api/cloud/server` answer: what the device saw of the fleet's certificate. */
export interface CloudServerProbe {
  url: string;
  /** The certificate chain verifies against the system's CAs and matches the host name. */
  trusted: boolean;
  fingerprint: string;
  subject: string;
  issuer: string;
  valid_to: string;
}

/** A bind code the device shows (`POST /api/cloud/bind/code`). */
export interface CloudBindCode {
  code: string;
  expires_in: number;
}

export const CLOUD_REGIONS = ['us', 'eu', 'asia'] as const;
export type CloudRegion = (typeof CLOUD_REGIONS)[number];

/** SPEC 5's cloud sign-up form. */
export interface CloudSignUp {
  username: string;
  email: string;
  email_code: string;
  password: string;
  password2: string;
  privacy: boolean;
  region: string;
}

/** SPEC 5's cloud login form (binds the device to that account). */
export interface CloudLogin {
  username: string;
  password: string;
  region: string;
  /** The fleet account's TOTP code when it has one. */
  totp?: string;
}

export const CLOUD_USERNAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{4,14}$/;
// Simple and strict enough: one @, a dot in the domain, no spaces (HTML's own is similar).
export const CLOUD_EMAIL_RE = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/;
export const CLOUD_PASSWORD_MIN = 6;
export const CLOUD_PASSWORD_MAX = 10;

/** SPEC 5's messages, the keys the console translates. */
export type CloudFieldError =
  | 'username_required'
  | 'username_invalid'
  | 'email_invalid'
  | 'email_code_invalid'
  | 'privacy_required'
  | 'password_required'
  | 'password_length'
  | 'password_mismatch'
  | 'region_required';

/** SPEC 5's cloud sign-up rules: field → error, empty when valid. */
export function validateCloudSignUp(
  f: Partial<CloudSignUp>,
): Partial<Record<keyof CloudSignUp, CloudFieldError>> {
  const out: Partial<Record<keyof CloudSignUp, CloudFieldError>> = {};
  const username = f.username ?? '';
  if (!username) out.username = 'username_required';
  else if (!CLOUD_USERNAME_RE.test(username)) out.username = 'username_invalid';
  if (!CLOUD_EMAIL_RE.test(f.email ?? '')) out.email = 'email_invalid';
  if (!new RegExp(`^\\d{${EMAIL_CODE_DIGITS}}$`).test(f.email_code ?? '')) {
    out.email_code = 'email_code_invalid';
  }
  if (f.privacy !== true) out.privacy = 'privacy_required';
  const pw = f.password ?? '';
  if (!pw) out.password = 'password_required';
  else if (pw.length < CLOUD_PASSWORD_MIN || pw.length > CLOUD_PASSWORD_MAX) {
    out.password = 'password_length';
  }
  if (pw && f.password2 !== pw) out.password2 = 'password_mismatch';
  if (!f.region) out.region = 'region_required';
  return out;
}

/** SPEC 5's cloud login rules (password 6-10, username and region required). */
export function validateCloudLogin(
  f: Partial<CloudLogin>,
): Partial<Record<keyof CloudLogin, CloudFieldError>> {
  const out: Partial<Record<keyof CloudLogin, CloudFieldError>> = {};
  if (!f.username) out.username = 'username_required';
  const pw = f.password ?? '';
  if (!pw) out.password = 'password_required';
  else if (pw.length < CLOUD_PASSWORD_MIN || pw.length > CLOUD_PASSWORD_MAX) {
    out.password = 'password_length';
  }
  if (!f.region) out.region = 'region_required';
  return out;
}

// ---- the fleet's HTTP API (used by the device) -------------------------------------------------

/** What a device says about itself when it asks for a code or logs in (not secret). */
export interface DeviceIdentity {
  /** Hardware identity: the binding's fingerprint, checked again on every agent connection. */
  mac: string;
  serial: string;
  name: string;
  model: string;
  version: string;
}

/** `POST /cloud-basic/v1/bind/codes` {device: DeviceIdentity} → */
export interface BindCodeAnswer {
  code: string;
  expires_in: number;
  /** Secret to the device that asked: only it can collect the binding (`bind/poll`). */
  claim_token: string;
}

/**
 * `POST /cloud-basic/v1/bind/poll` {claim_token} → long-polls up to 25 s; `pending: true` until
 * an account claims the code; 410 once the code expired or was collected.
 * `POST /cloud-basic/v1/bind/login` {username, password, totp?, device} → the same binding.
 */
export interface BindResult {
  device_id: string;
  /** base64url; stored on the device (0600), only a hash of it on the fleet. */
  secret: string;
  account: { username: string; email: string };
  /** The replicas' agent URLs the device may use (it rotates through them on failure). */
  endpoints: string[];
}

export type BindPollAnswer = { pending: true } | ({ pending: false } & BindResult);

// ---- the agent socket --------------------------------------------------------------------------

/** TURN REST credentials (coturn `use-auth-secret`), SPEC's `turn` state shape. */
export interface FleetTurn {
  uris: string[];
  username: string;
  password: string;
  ttl: number;
}

/**
 * Authentication of the agent socket, in the upgrade request's headers:
 * `Authorization: Device <deviceId>:<secret>` plus `X-Kvm-Device-Mac` and `X-Kvm-Device-Serial`.
 * 401 unknown/revoked (`X-Kvm-Binding: revoked` when the fleet ended the binding: the device
 * forgets it), 403 fingerprint mismatch (a secret on another device).
 */
export const AGENT_AUTH_SCHEME = 'Device';

/** Control frames (text, JSON), each with `t`. */
export type AgentControl =
  // device → fleet, first frame
  | { t: 'hello'; version: string; identity: DeviceIdentity }
  // fleet → device, the answer
  | {
      t: 'welcome';
      replica: string;
      endpoints: string[];
      turn: FleetTurn | null;
      ping_ms: number;
    }
  // either way; `ts` echoed
  | { t: 'ping'; ts: number }
  | { t: 'pong'; ts: number }
  // fleet → device: a command; device → fleet: its result
  | { t: 'cmd'; id: number; name: AgentCommand; args?: Record<string, unknown> }
  | { t: 'res'; id: number; ok: true; result: unknown }
  | { t: 'res'; id: number; ok: false; error: string; message: string }
  // fleet → device: open a stream to the device's own server
  | {
      t: 'open';
      sid: number;
      kind: 'http' | 'ws';
      method: string;
      /** Path and query on the device (`/api/info`), never absolute. */
      path: string;
      headers: Record<string, string>;
      /** Who asked, recorded in the device's log and given its console session. */
      user: { id: string; name: string };
      /** ws: the subprotocols the browser asked for. */
      protocols?: string[];
    }
  // device → fleet: the response head (http) or the upgrade's outcome (ws: 101 or an error)
  | { t: 'head'; sid: number; status: number; headers: Record<string, string>; protocol?: string }
  // either way: the stream's sender has sent `n` more bytes it may not exceed the window with
  | { t: 'ack'; sid: number; n: number }
  // either way: the stream ends (http: end of body; ws: close with code)
  | { t: 'end'; sid: number; code?: number; reason?: string }
  // fleet → device: TURN credentials renewed
  | { t: 'turn'; turn: FleetTurn | null }
  // device → fleet: the admin unbound on the device; fleet → device: the binding was removed
  | { t: 'unbound'; by: 'device' | 'fleet' };

export type AgentCommand = 'info' | 'snapshot' | 'unbind';

/**
 * Binary frames carry a stream's bytes: u32 sid (big-endian), u8 kind, then the payload.
 * http bodies are KIND_DATA; a tunnelled WebSocket's messages keep their type.
 */
export const STREAM_KIND = { data: 1, text: 2, binary: 3 } as const;
export type StreamKind = (typeof STREAM_KIND)[keyof typeof STREAM_KIND];
export const STREAM_HEADER_BYTES = 5;

export function encodeStreamFrame(sid: number, kind: StreamKind, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(STREAM_HEADER_BYTES + payload.byteLength);
  new DataView(out.buffer).setUint32(0, sid >>> 0);
  out[4] = kind;
  out.set(payload, STREAM_HEADER_BYTES);
  return out;
}

export function decodeStreamFrame(
  frame: Uint8Array,
): { sid: number; kind: StreamKind; payload: Uint8Array } | null {
  if (frame.byteLength < STREAM_HEADER_BYTES) return null;
  const kind = frame[4] as number;
  if (kind !== 1 && kind !== 2 && kind !== 3) return null;
  return {
    sid: new DataView(frame.buffer, frame.byteOffset, frame.byteLength).getUint32(0),
    kind: kind as StreamKind,
    payload: frame.subarray(STREAM_HEADER_BYTES),
  };
}

/** A JSON text's object (not an array), or null when the text is not one. */
export function parseJsonObject(text: string): Record<string, unknown> | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  return v as Record<string, unknown>;
}

/** Parses a control frame; null when it is not one (the receiver closes with 1008). */
export function parseAgentControl(text: string): AgentControl | null {
  if (text.length > AGENT_MAX_FRAME) return null;
  const v = parseJsonObject(text);
  if (v === null) return null;
  const t = (v as { t?: unknown }).t;
  const known = [
    'hello',
    'welcome',
    'ping',
    'pong',
    'cmd',
    'res',
    'open',
    'head',
    'ack',
    'end',
    'turn',
    'unbound',
  ];
  if (typeof t !== 'string' || !known.includes(t)) return null;
  const sid = (v as { sid?: unknown }).sid;
  if (['open', 'head', 'ack', 'end'].includes(t)) {
    if (typeof sid !== 'number' || !Number.isInteger(sid) || sid < 0 || sid > 0xffffffff) {
      return null;
    }
  }
  return v as AgentControl;
}
