import { describe, expect, it } from 'vitest';
import { isOfficialHost, isOfficialOrigin, OFFICIAL_HOST_DOMAINS } from './hosts';

describe('official host names (SPEC 9)', () => {
  it('lists five domains', () => {
    expect(OFFICIAL_HOST_DOMAINS).toHaveLength(5);
  });

  it('matches a domain and the names below it, label by label, in any case', () => {
    for (const host of [
      'glkvm.com',
      'www.glkvm.com',
      'A.B.GL-INET.CN',
      'goodcloud.xyz.',
      'gl-inet.com',
    ]) {
      expect(isOfficialHost(host), host).toBe(true);
    }
    for (const host of [
      'evilglkvm.com',
      'glkvm.com.example.net',
      'glkvm.co',
      'localhost',
      '',
      'com',
    ]) {
      expect(isOfficialHost(host), host).toBe(false);
    }
  });

  it('counts https origins only', () => {
    expect(isOfficialOrigin('https://www.glkvm.com')).toBe(true);
    expect(isOfficialOrigin('https://www.glkvm.com:8443')).toBe(true);
    expect(isOfficialOrigin('http://www.glkvm.com')).toBe(false);
    expect(isOfficialOrigin('https://glkvm.com.evil.example')).toBe(false);
    expect(isOfficialOrigin('null')).toBe(false);
  });
});
