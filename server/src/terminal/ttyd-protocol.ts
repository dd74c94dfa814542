/**
 * ttyd's WebSocket protocol (subprotocol `tty`), so ttyd's own page and clients work against
 * `/extras/webterm/ttyd/ws` as on PiKVM/GL. Every frame after the first starts with one command
 * byte; the first is a JSON object `{"AuthToken":..., "columns":N, "rows":M}`.
 */

/** Client to server. */
export const CMD_INPUT = 0x30; // '0' + bytes for the terminal
export const CMD_RESIZE = 0x31; // '1' + JSON {columns, rows}
export const CMD_PAUSE = 0x32; // '2'
export const CMD_RESUME = 0x33; // '3'
export const CMD_JSON = 0x7b; // '{': the handshake
/** Server to client. */
export const OUT_OUTPUT = 0x30; // '0' + terminal output
export const OUT_TITLE = 0x31; // '1' + window title
export const OUT_PREFERENCES = 0x32; // '2' + JSON of client options

export const TTYD_SUBPROTOCOL = 'tty';

/** A terminal's size is clamped to this (a huge one costs the shell, not us, but still). */
export const MAX_COLUMNS = 1000;
export const MAX_ROWS = 500;

export type { TermSize } from '../drivers/serial/types';
import type { TermSize } from '../drivers/serial/types';

export type ClientMessage =
  | { type: 'hello'; size: TermSize | null }
  | { type: 'input'; data: Buffer }
  | { type: 'resize'; size: TermSize }
  | { type: 'pause' }
  | { type: 'resume' }
  | { type: 'invalid'; reason: string };

function sizeOf(v: unknown): TermSize | null {
  if (v === null || typeof v !== 'object') return null;
  const { columns, rows } = v as Record<string, unknown>;
  if (typeof columns !== 'number' || typeof rows !== 'number') return null;
  if (!Number.isInteger(columns) || !Number.isInteger(rows) || columns < 1 || rows < 1) return null;
  return { columns: Math.min(columns, MAX_COLUMNS), rows: Math.min(rows, MAX_ROWS) };
}

function json(data: Buffer): unknown {
  try {
    return JSON.parse(data.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** One client frame (text or binary: ttyd's page sends both). */
export function parseClient(data: Buffer): ClientMessage {
  if (data.length === 0) return { type: 'invalid', reason: 'empty frame' };
  switch (data[0]) {
    case CMD_JSON: {
      const v = json(data);
      if (v === undefined || v === null || typeof v !== 'object')
        return { type: 'invalid', reason: 'bad handshake JSON' };
      return { type: 'hello', size: sizeOf(v) };
    }
    case CMD_INPUT:
      return { type: 'input', data: data.subarray(1) };
    case CMD_RESIZE: {
      const size = sizeOf(json(data.subarray(1)));
      return size ? { type: 'resize', size } : { type: 'invalid', reason: 'bad resize' };
    }
    case CMD_PAUSE:
      return { type: 'pause' };
    case CMD_RESUME:
      return { type: 'resume' };
    default:
      return { type: 'invalid', reason: `unknown command ${data[0]}` };
  }
}

export function frame(cmd: number, payload: Buffer | string): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const out = Buffer.allocUnsafe(body.length + 1);
  out[0] = cmd;
  body.copy(out, 1);
  return out;
}
