/** The cloud panel's texts that code passes around: SPEC 5's field messages, the states. */
import { useEffect, useState } from 'react';
import type { CloudAgentState, CloudFieldError } from '@kvm/protocol/cloud';
import type { I18nKey } from '../../i18n/keys';

export const FIELD_ERROR_TEXT: Record<CloudFieldError, I18nKey> = {
  username_required: 'cloud.errors.username_required',
  username_invalid: 'cloud.errors.username_invalid',
  email_invalid: 'cloud.errors.email_invalid',
  email_code_invalid: 'cloud.errors.email_code_invalid',
  privacy_required: 'cloud.errors.privacy_required',
  password_required: 'cloud.errors.password_required',
  password_length: 'cloud.errors.password_length',
  password_mismatch: 'cloud.errors.password_mismatch',
  region_required: 'cloud.errors.region_required',
};

export const STATE_TEXT: Record<CloudAgentState, I18nKey> = {
  disabled: 'cloud.state.disabled',
  unbound: 'cloud.state.unbound',
  connecting: 'cloud.state.connecting',
  online: 'cloud.state.online',
  offline: 'cloud.state.offline',
  revoked: 'cloud.state.revoked',
};

export const STATE_COLOR: Record<CloudAgentState, string> = {
  disabled: 'default',
  unbound: 'default',
  connecting: 'processing',
  online: 'success',
  offline: 'error',
  revoked: 'warning',
};

/** Whole seconds from `now` until `until` (both ms since the epoch); 0 once past. */
export function secondsUntil(until: number | null, now: number): number {
  return until === null ? 0 : Math.max(0, Math.ceil((until - now) / 1000));
}

/** Whole seconds until `until` (ms since the epoch), re-rendering every second; 0 once past. */
export function useSecondsLeft(until: number | null): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (until === null) return;
    const read = () => setNow(Date.now());
    // A new deadline is counted from now, not from the last tick.
    const first = setTimeout(read, 0);
    const timer = setInterval(read, 1000);
    return () => {
      clearTimeout(first);
      clearInterval(timer);
    };
  }, [until]);
  return secondsUntil(until, now);
}
