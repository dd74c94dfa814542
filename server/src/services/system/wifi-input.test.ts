import { describe, expect, it } from 'vitest';
import { BadRequestError } from '../../errors';
import { parseWifiForget, parseWifiJoin } from './wifi-input';

describe('parseWifiJoin (connect body)', () => {
  it('makes the join the driver takes: hidden only when exactly true, remember unless false or 0', () => {
    expect(parseWifiJoin({ ssid: 'KVM-Lab' })).toEqual({ ssid: 'KVM-Lab', remember: true });
    expect(
      parseWifiJoin({
        ssid: 'KVM-Lab',
        key: 'kvm-lab-pass',
        bssid: '02:00:00:AA:bb:01',
        hidden: true,
        remember: 0,
      }),
    ).toEqual({
      ssid: 'KVM-Lab',
      key: 'kvm-lab-pass',
      bssid: '02:00:00:AA:bb:01',
      hidden: true,
      remember: false,
    });
    expect(parseWifiJoin({ ssid: 'KVM-Lab', hidden: 'true', key: '', remember: 'no' })).toEqual({
      ssid: 'KVM-Lab',
      remember: true,
    });
  });

  it.each([
    [[], 'Configuration data must be in JSON object format'],
    [null, 'Configuration data must be in JSON object format'],
    [{}, 'Missing SSID'],
    [{ ssid: 7 }, 'ssid must be a string'],
    [{ ssid: 'KVM-Lab', key: 12345678 }, 'key must be a string'],
    [
      { ssid: 'KVM-Lab', bssid: '02:00:00:aa:bb' },
      'bssid must be six pairs of hex digits separated by colons',
    ],
  ])('%j → %s', (body, message) => {
    expect(() => parseWifiJoin(body)).toThrow(BadRequestError);
    expect(() => parseWifiJoin(body)).toThrow(message);
  });
});

describe('parseWifiForget (remove_saved_ap)', () => {
  it("takes the body's ssid, else the query's", () => {
    expect(parseWifiForget({ ssid: 'A' }, { ssid: 'B' })).toBe('A');
    expect(parseWifiForget(undefined, { ssid: 'B' })).toBe('B');
    expect(parseWifiForget({}, { ssid: 'B' })).toBe('B');
    expect(() => parseWifiForget(undefined, {})).toThrow('Missing SSID');
    expect(() => parseWifiForget('B', {})).toThrow(
      'Configuration data must be in JSON object format',
    );
  });
});
