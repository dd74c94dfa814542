import { describe, expect, it } from 'vitest';
import { netbirdManagementUrlProblem, netbirdSetupKeyProblem } from './netbird';
import { controllerOf, normalizeNwid } from './zerotier';

describe('NetBird setup keys', () => {
  it("takes NetBird's UUID keys and refuses what could be an option or carry other characters", () => {
    expect(netbirdSetupKeyProblem('A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF')).toBeNull();
    expect(netbirdSetupKeyProblem('abcdefgh')).toBeNull();
    expect(netbirdSetupKeyProblem('short')).toMatch(/8 to 128/);
    expect(netbirdSetupKeyProblem('A'.repeat(129))).toMatch(/8 to 128/);
    expect(netbirdSetupKeyProblem('--management-url=x')).toMatch(/letters, digits and hyphens/);
    expect(netbirdSetupKeyProblem('-abcdefgh')).toMatch(/letters, digits and hyphens/);
    for (const bad of ['abcdefgh ', 'abc$(id)def', 'abcdefgh\n', 'abcdéfgh', 'abc;defgh']) {
      expect(netbirdSetupKeyProblem(bad), bad).not.toBeNull();
    }
  });
});

describe('NetBird management URLs', () => {
  it('empty is NetBird’s own server; https on a LAN address is a self-hosted one', () => {
    expect(netbirdManagementUrlProblem('')).toBeNull();
    expect(netbirdManagementUrlProblem('https://netbird.example.com')).toBeNull();
    expect(netbirdManagementUrlProblem('https://192.168.8.20:33073')).toBeNull();
    expect(netbirdManagementUrlProblem('https://[fd00::1]:443/api')).toBeNull();
  });

  it('refuses other schemes, credentials, queries, fragments, spaces and long ones', () => {
    expect(netbirdManagementUrlProblem('http://netbird.example.com')).toMatch(/https/);
    expect(netbirdManagementUrlProblem('https://u:p@netbird.example.com')).toMatch(/user name/);
    expect(netbirdManagementUrlProblem('https://netbird.example.com/?a=1')).toMatch(/query/);
    expect(netbirdManagementUrlProblem('https://netbird.example.com/#x')).toMatch(/query/);
    expect(netbirdManagementUrlProblem('https://netbird.example.com/a b')).not.toBeNull();
    expect(netbirdManagementUrlProblem('https://')).not.toBeNull();
    expect(netbirdManagementUrlProblem(`https://${'a'.repeat(250)}.com`)).toMatch(/256/);
  });
});

describe('ZeroTier network ids', () => {
  it('exactly 16 hex digits, kept in lower case; the controller is the first 10', () => {
    expect(normalizeNwid('8056C2E21C000001')).toBe('8056c2e21c000001');
    expect(controllerOf('8056c2e21c000001')).toBe('8056c2e21c');
    for (const bad of [
      '',
      '8056c2e21c00000',
      '8056c2e21c0000011',
      '8056c2e21c00000g',
      ' 8056c2e21c000001',
    ]) {
      expect(normalizeNwid(bad), bad).toBeNull();
    }
  });
});
