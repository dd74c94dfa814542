import { describe, expect, it } from 'vitest';
import { terminalTab, terminalUrl } from './open-terminal';

describe('open-terminal', () => {
  it('opens /webterm on the device shell, or on the serial console with ?tab=serial', () => {
    expect(terminalUrl()).toBe(new URL('/webterm', window.location.href).href);
    expect(terminalUrl('serial')).toBe(new URL('/webterm?tab=serial', window.location.href).href);
    expect(terminalTab('')).toBe('device');
    expect(terminalTab('?tab=serial')).toBe('serial');
    expect(terminalTab('?tab=../etc')).toBe('device');
  });
});
