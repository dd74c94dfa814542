/**
 * SPEC 2 terminal access: /webterm on the same origin, in a new window (the host app's window
 * when embedded). The toolbar's terminal button and the toolbox's terminal group open it here;
 * `?tab=serial` opens it on the remote computer's serial console.
 */
import { withBase } from '../../lib/base';
import { getEmbed } from '../../lib/embed';
import type { TerminalTarget } from './ttyd-codec';

/** The tab /webterm opens on: `?tab=serial`, else the device's shell. */
export function terminalTab(search: string): TerminalTarget {
  return new URLSearchParams(search).get('tab') === 'serial' ? 'serial' : 'device';
}

export function terminalUrl(target: TerminalTarget = 'device'): string {
  const path = target === 'serial' ? '/webterm?tab=serial' : '/webterm';
  return new URL(withBase(path), window.location.href).href;
}

export function openTerminal(target: TerminalTarget = 'device'): void {
  getEmbed().openWindowUrl(terminalUrl(target));
}
