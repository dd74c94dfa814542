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
  | 'gpio'
  | 'ocr'
  | 'audio'
  | 'clients'
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
    /**
     * Our own product and firmware version (shown in the help/about dialog). `version` is
     * package.json's (`0.2.0`); `device_id` the device's stable id (server/src/services/device-id.ts).
     */
    product: { name: string; version: string; model: string; target: string; device_id: string };
    kernel: { system: string; release: string; version: string; machine: string };
    /** `video` and `board` are always sent, null when unknown (kvmd, GL). */
    platform: {
      type: string;
      base: string;
      model: string;
      serial: string;
      video: string | null;
      board: string | null;
      /**
       * Ours: what keeps the device's own hardware from working, for the admin (the gadget
       * target: "No USB device controller (UDC) in /sys/class/udc: ...", "Kernel module
       * usb_f_mass_storage is missing: no virtual media", ...); [] when nothing does.
       */
      problems: string[];
      /**
       * Ours: the USB device controller the gadget is bound to (or would be) and its state
       * (`/sys/class/udc/<name>/state`: configured, suspended, not attached, ...); null off
       * the gadget target or when the board has none.
       */
      udc: { name: string; state: string } | null;
    };
    streamer: { app: string; version: string; features: Record<string, boolean> };
  };
  auth: { enabled: boolean };
  meta: { kvm: Record<string, unknown>; server: { host: string } };
  extras: Record<string, unknown>;
  /** kvmd 4.197+: the host name of the device itself. */
  node: { host: string };
  uptime: {
    total: number;
    parts: { days: number; hours: number; minutes: number; seconds: number };
  };
  health: {
    temp: { cpu: number | null };
    cpu: { percent: number | null };
    mem: { percent: number | null; total: number | null; available: number | null };
    throttling: null;
  };
  fan: { monitored: boolean; state: null };
}
/** The default set (GL's answer without `?fields=`). */
export const INFO_FIELDS = ['system', 'auth', 'meta', 'extras'] as const;
/** Every field (kvmd 4.2xx's `?legacy=0` default). */
export const INFO_ALL_FIELDS = [...INFO_FIELDS, 'health', 'uptime', 'node', 'fan'] as const;
export type InfoField = (typeof INFO_ALL_FIELDS)[number];
