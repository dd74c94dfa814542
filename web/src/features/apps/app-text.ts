/** The apps' states as the console shows them: every AppState its own text and colour. */
import { useEffect, useRef } from 'react';
import type { AppState } from '@kvm/protocol/apps';
import type { I18nKey } from '../../i18n/keys';
import { VisiblePoller } from './poller';

export const STATE_TEXT: Record<AppState, I18nKey> = {
  not_installed: 'apps.state.not_installed',
  stopped: 'apps.state.stopped',
  starting: 'apps.state.starting',
  needs_login: 'apps.state.needs_login',
  connecting: 'apps.state.connecting',
  connected: 'apps.state.connected',
  unreachable: 'apps.state.unreachable',
  error: 'apps.state.error',
};

/** antd Tag colours, one per state. */
export const STATE_COLOR: Record<AppState, string> = {
  not_installed: 'default',
  stopped: 'purple',
  starting: 'processing',
  needs_login: 'gold',
  connecting: 'cyan',
  connected: 'success',
  unreachable: 'warning',
  error: 'error',
};

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** Polls `poll` every `intervalMs` while mounted and `enabled`, never while the tab is hidden. */
export function usePoll(poll: () => Promise<unknown>, intervalMs: number, enabled = true): void {
  const latest = useRef(poll);
  useEffect(() => {
    latest.current = poll;
  });
  useEffect(() => {
    if (!enabled) return undefined;
    const poller = new VisiblePoller(() => latest.current(), intervalMs);
    poller.start();
    return () => poller.stop();
  }, [intervalMs, enabled]);
}
