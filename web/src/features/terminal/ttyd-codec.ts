/**
 * ttyd's WebSocket protocol (subprotocol `tty`), the console's side: the first message is the
 * JSON handshake, then one command byte and its payload per frame.
 */
import { socketUrl } from '../../lib/base';

export const TTYD_SUBPROTOCOL = 'tty';

export type TerminalTarget = 'device' | 'serial';

export interface TermSize {
  columns: number;
  rows: number;
}

const encoder = new TextEncoder();

function withCommand(cmd: string, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length + 1);
  out[0] = cmd.charCodeAt(0);
  out.set(payload, 1);
  return out;
}

export function helloFrame(size: TermSize): string {
  // AuthToken is ttyd's own credential; the device checks the session instead.
  return JSON.stringify({ AuthToken: '', columns: size.columns, rows: size.rows });
}

export function inputFrame(data: string | Uint8Array): Uint8Array {
  return withCommand('0', typeof data === 'string' ? encoder.encode(data) : data);
}

export function resizeFrame(size: TermSize): Uint8Array {
  return withCommand('1', encoder.encode(JSON.stringify(size)));
}

export function pauseFrame(): Uint8Array {
  return withCommand('2', new Uint8Array(0));
}

export function resumeFrame(): Uint8Array {
  return withCommand('3', new Uint8Array(0));
}

export type ServerMessage =
  | { type: 'output'; data: Uint8Array }
  | { type: 'title'; title: string }
  | { type: 'preferences'; preferences: Record<string, unknown> }
  | { type: 'unknown' };

export function decodeServer(frame: ArrayBuffer | Uint8Array | string): ServerMessage {
  const bytes =
    typeof frame === 'string'
      ? encoder.encode(frame)
      : frame instanceof Uint8Array
        ? frame
        : new Uint8Array(frame);
  if (bytes.length === 0) return { type: 'unknown' };
  const body = bytes.subarray(1);
  switch (String.fromCharCode(bytes[0]!)) {
    case '0':
      return { type: 'output', data: body };
    case '1':
      return { type: 'title', title: new TextDecoder().decode(body) };
    case '2': {
      try {
        const v = JSON.parse(new TextDecoder().decode(body)) as unknown;
        if (v && typeof v === 'object')
          return { type: 'preferences', preferences: v as Record<string, unknown> };
      } catch {
        /* ignored as ttyd's page does */
      }
      return { type: 'preferences', preferences: {} };
    }
    default:
      return { type: 'unknown' };
  }
}

export function terminalUrl(
  target: TerminalTarget,
  loc: Pick<Location, 'protocol' | 'host'> = location,
): string {
  return socketUrl(loc, `/api/terminal/ws?target=${target}`);
}
