/**
 * The Janus API subset on `/janus/ws` (wire-protocol.md 3) and the `janus.plugin.ustreamer`
 * plugin messages. Names stay as the wire has them.
 */

export const USTREAMER_PLUGIN = 'janus.plugin.ustreamer';
export const JANUS_SUBPROTOCOL = 'janus-protocol';

/** Janus core error codes (janus `apierror.h`); only the ones this gateway answers. */
export const JanusErrorCode = {
  unknown: 490,
  unknownRequest: 453,
  invalidJson: 454,
  invalidJsonObject: 455,
  unauthorized: 403,
  missingMandatoryElement: 456,
  sessionNotFound: 458,
  handleNotFound: 459,
  pluginNotFound: 460,
  pluginAttach: 461,
  jsepUnknownType: 464,
  jsepInvalidSdp: 465,
  invalidElementType: 467,
  sessionConflict: 468,
  unexpectedAnswer: 469,
} as const;

/**
 * A request the gateway refuses: answered as `{janus:"error", error:{code, reason}}` with the
 * request's transaction. Janus's own wire error, not one of the HTTP API's errors.
 */
export class JanusRequestError extends Error {
  constructor(
    readonly code: number,
    reason: string,
  ) {
    super(reason);
    this.name = 'JanusRequestError';
  }
}

export interface Jsep {
  type: 'offer' | 'answer';
  sdp: string;
}

/** What a client may send (every field checked at runtime: this is untrusted input). */
export interface JanusRequest {
  janus: string;
  transaction: string;
  session_id?: number;
  handle_id?: number;
  plugin?: string;
  opaque_id?: string;
  id?: number;
  body?: Record<string, unknown>;
  jsep?: Jsep;
  candidate?: Record<string, unknown>;
  candidates?: Record<string, unknown>[];
}

/** `plugindata.data` of an event: `{ustreamer:"event", result:{status,...}}` or an error. */
export type UstreamerEventData =
  | { ustreamer: 'event'; result: { status: string; [key: string]: unknown } }
  | { ustreamer: 'event'; error_code: number; error: string };

/** Plugin-level error codes the ustreamer plugin pushes as events. */
export const UstreamerError = {
  requestMissing: [400, 'Request missing'],
  requestNotString: [400, 'Request not a string'],
  notImplemented: [405, 'Not implemented'],
} as const;

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A positive integer id as Janus uses them (53-bit safe). */
export function isJanusId(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
}
