/**
 * The event socket `/api/ws` (wire-protocol.md 2). Text frames are `{event_type, event}` in both
 * directions; binary frames are `[op:u8][payload]`.
 */

export interface EventFrame<T extends string = string, E = unknown> {
  event_type: T;
  event: E;
}

/** First frame to every new client. */
export interface LoopEvent {
  version: { major: number; minor: number };
}

/** `info` event: one field of `/api/info` per frame (wire-protocol.md 2.3). */
export type InfoEvent = Partial<Pick<InfoResult, 'system' | 'auth' | 'meta' | 'extras'>>;

/** Event types this server sends today. Later subsystems add theirs (hid, atx, msd, ...). */
export type ServerEventType =
  | 'loop'
  | 'pong'
  | 'info'
  | 'hid'
  | 'hid_keymaps'
  | 'atx'
  | 'msd'
  | 'streamer'
  | 'fingerbot'
  | 'turn';

/** Client to server JSON ping; answered by `{event_type:"pong", event:{}}`. */
export const PING_FRAME: EventFrame<'ping', Record<string, never>> = {
  event_type: 'ping',
  event: {},
};

/** Binary ping: client sends 0x00, server answers 0xFF. */
export const BINARY_PING = 0x00;
export const BINARY_PONG = 0xff;

/** `/api/info` result (wire-protocol.md 1.3). */
export interface InfoResult {
  system: {
    kvmd: { version: string };
    /** Our own product and firmware version (shown in the help/about dialog). */
    product: { name: string; version: string; model: string; target: string };
    kernel: { system: string; release: string; version: string; machine: string };
    platform: { type: string; base: string; model: string; serial: string };
    streamer: { app: string; version: string; features: Record<string, boolean> };
  };
  auth: { enabled: boolean };
  meta: { kvm: Record<string, unknown>; server: { host: string } };
  extras: Record<string, unknown>;
}
export const INFO_FIELDS = ['system', 'auth', 'meta', 'extras'] as const;
export type InfoField = (typeof INFO_FIELDS)[number];
