/** Test helper: what the console asks its HidSender to press. */
import { vi } from 'vitest';
import { hidSender } from '../features/input/input-session';

/** Every key event the console's HidSender is asked for, as `code:down` / `code:up`. */
export function recordKeys(): string[] {
  const events: string[] = [];
  vi.spyOn(hidSender, 'key').mockImplementation((code, pressed) => {
    events.push(`${code}:${pressed ? 'down' : 'up'}`);
    return true;
  });
  return events;
}

/** Ctrl+Alt+Del as the HidSender sees it: the keys down in order, up in reverse. */
export const CTRL_ALT_DEL: readonly string[] = [
  'ControlLeft:down',
  'AltLeft:down',
  'Delete:down',
  'Delete:up',
  'AltLeft:up',
  'ControlLeft:up',
];
