/** Join-form rules (IEEE 802.11 SSID length, WPA passphrase 8..63 or 64 hex digits). */
import type { WifiConnectResult } from '@kvm/protocol/system';
import { isValidWpaKey, wifiSsidProblem } from '@kvm/protocol/validation';
import type { I18nKey } from '../../i18n/keys';

/** The device's own rules (protocol/src/validation.ts), so the form refuses what it would. */
export function ssidError(ssid: string): I18nKey | null {
  switch (wifiSsidProblem(ssid)) {
    case 'empty':
      return 'settings.wifi.ssidRequired';
    case 'long':
      return 'settings.wifi.ssidTooLong';
    case 'nul':
    case 'unpaired':
      return 'settings.wifi.ssidInvalid';
    default:
      return null;
  }
}

/** A secure network needs a key; an open one takes none. */
export function wifiKeyError(key: string, secure: boolean): I18nKey | null {
  if (!secure) return null;
  if (key.length === 0) return 'settings.wifi.passwordRequired';
  if (isValidWpaKey(key)) return null; // 8-63 printable ASCII, or a raw PSK of 64 hex digits
  if (key.length < 8 || key.length > 63) return 'settings.wifi.passwordLength';
  return 'settings.wifi.passwordCharacters';
}

/** SPEC 8 'Wi-Fi join failed', with why when the device says. */
export function joinFailureReason(result: WifiConnectResult): I18nKey | null {
  if (result.fail_type === 'key') return 'settings.wifi.failWrongPassword';
  if (result.fail_type === 'not-found') return 'settings.wifi.failNotFound';
  return null;
}

/** 0..4 bars from the 0-100 quality (or the dBm signal when quality is missing). */
export function signalBars(quality: number | undefined, signalDbm: number): number {
  const q =
    typeof quality === 'number' && Number.isFinite(quality)
      ? quality
      : Math.min(100, Math.max(0, 2 * (signalDbm + 100)));
  if (q >= 75) return 4;
  if (q >= 50) return 3;
  if (q >= 25) return 2;
  if (q > 0) return 1;
  return 0;
}
