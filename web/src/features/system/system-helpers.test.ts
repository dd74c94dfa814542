import { describe, expect, it } from 'vitest';
import type { PendingNetworkChange } from '@kvm/protocol/system';
import { newAddressLink, secondsLeft, trackPending } from './pending-change';
import {
  deviceNowMs,
  formatDeviceTime,
  offsetHoursOf,
  timeZoneMinutesFor,
  UTC_OFFSET_HOURS,
  utcOffsetLabel,
} from './time-zone';
import { joinFailureReason, signalBars, ssidError, wifiKeyError } from './wifi-rules';

describe('time zone', () => {
  it('lists UTC-12:00 to UTC+14:00 and sends the inverted sign (SPEC 3)', () => {
    expect(UTC_OFFSET_HOURS).toHaveLength(27);
    expect(utcOffsetLabel((UTC_OFFSET_HOURS[0] ?? 0) * 60)).toBe('UTC-12:00');
    expect(utcOffsetLabel((UTC_OFFSET_HOURS.at(-1) ?? 0) * 60)).toBe('UTC+14:00');
    expect(timeZoneMinutesFor(8)).toBe(-480);
    expect(timeZoneMinutesFor(-5)).toBe(300);
    expect(Object.is(timeZoneMinutesFor(0), 0)).toBe(true);
    expect(utcOffsetLabel(330)).toBe('UTC+05:30');
    expect(offsetHoursOf(330)).toBeUndefined();
    expect(offsetHoursOf(-720)).toBe(-12);
  });

  it("formats the device's wall time from its clock plus the time elapsed here", () => {
    const at = deviceNowMs(1_700_000_000, 10_000, 12_500);
    expect(formatDeviceTime(at, 480)).toBe('2023-11-15 06:13:22');
    expect(formatDeviceTime(at, -300)).toBe('2023-11-14 17:13:22');
  });
});

describe('pending change', () => {
  const change = (patch: Partial<PendingNetworkChange>): PendingNetworkChange => ({
    id: 'x',
    kind: 'ethernet',
    expires_at: 0,
    timeout_s: 60,
    new_address: null,
    previous_address: null,
    ...patch,
  });

  it("trusts the device's deadline only within its window (clock skew)", () => {
    const now = 1_000_000;
    expect(trackPending(change({ expires_at: now + 59_000 }), now).deadline).toBe(now + 59_000);
    // device clock an hour ahead or behind: the window counts from receipt
    expect(trackPending(change({ expires_at: now + 3_600_000 }), now).deadline).toBe(now + 60_000);
    expect(trackPending(change({ expires_at: now - 3_600_000 }), now).deadline).toBe(now + 60_000);
    const tracked = trackPending(change({ expires_at: now + 59_000 }), now);
    expect(secondsLeft(tracked, now + 500)).toBe(59);
    expect(secondsLeft(tracked, now + 70_000)).toBe(0);
  });

  it('links the new address only when it is elsewhere', () => {
    const c = change({ new_address: 'https://192.168.8.50:8443/' });
    expect(newAddressLink(c, '192.168.8.50:8443')).toBeNull();
    expect(newAddressLink(c, '192.168.8.123:8443')).toBe('https://192.168.8.50:8443/');
    expect(newAddressLink(change({ new_address: 'not a url' }), 'x')).toBeNull();
  });
});

describe('Wi-Fi rules', () => {
  it('checks SSID and key lengths', () => {
    expect(ssidError('')).toBe('settings.wifi.ssidRequired');
    expect(ssidError('a'.repeat(32))).toBeNull();
    expect(ssidError('é'.repeat(17))).toBe('settings.wifi.ssidTooLong'); // 34 bytes
    expect(wifiKeyError('', false)).toBeNull();
    expect(wifiKeyError('', true)).toBe('settings.wifi.passwordRequired');
    expect(wifiKeyError('1234567', true)).toBe('settings.wifi.passwordLength');
    expect(wifiKeyError('12345678', true)).toBeNull();
    expect(wifiKeyError('x'.repeat(64), true)).toBe('settings.wifi.passwordLength');
    expect(wifiKeyError('a'.repeat(64), true)).toBeNull(); // a raw PSK in hex
    // The device's rules (issue 21): names like options are names, keys are printable ASCII.
    expect(ssidError('--help')).toBeNull();
    expect(ssidError('"; id; "')).toBeNull();
    expect(ssidError('a\u0000b')).toBe('settings.wifi.ssidInvalid');
    expect(wifiKeyError('-aaaaaaaaaa', true)).toBeNull();
    expect(wifiKeyError('secret\npass', true)).toBe('settings.wifi.passwordCharacters');
    expect(wifiKeyError('pässwörter', true)).toBe('settings.wifi.passwordCharacters');
  });

  it('names why a join failed and draws signal bars', () => {
    expect(joinFailureReason({ result: 'failed', fail_type: 'key' })).toBe(
      'settings.wifi.failWrongPassword',
    );
    expect(joinFailureReason({ result: 'failed', fail_type: 'not-found' })).toBe(
      'settings.wifi.failNotFound',
    );
    expect(joinFailureReason({ result: 'failed' })).toBeNull();
    expect(signalBars(90, -40)).toBe(4);
    expect(signalBars(30, -85)).toBe(2);
    expect(signalBars(undefined, -100)).toBe(0);
    expect(signalBars(undefined, -70)).toBe(3);
  });
});
