import { describe, expect, it } from 'vitest';
import { maskText, maskValue } from './mask';

describe('log masking', () => {
  it('replaces secret values in k=v, k: v and JSON forms', () => {
    expect(maskText('GET /x?auth_token=abc123&a=1')).toBe('GET /x?auth_token=xxxx&a=1');
    expect(maskText('password=hunter2 passwd=p2')).toBe('password=xxxx passwd=xxxx');
    expect(maskText('{"token":"s3cr3t","user":"admin"}')).toBe('{"token":"xxxx","user":"admin"}');
    expect(maskText('Cookie: auth_token=zz')).toBe('Cookie: xxxx');
    expect(maskText('session a'.repeat(1) + ' ' + 'ab'.repeat(32))).not.toContain('ab'.repeat(32));
  });

  it('masks public IPv4 last octets and public IPv6, keeps private, loopback and link-local', () => {
    expect(maskText('from 8.8.4.4 and 203.0.113.77')).toBe('from 8.8.4.x and 203.0.113.x');
    expect(maskText('10.0.0.5 192.168.8.1 127.0.0.1 169.254.3.4 172.20.1.1')).toBe(
      '10.0.0.5 192.168.8.1 127.0.0.1 169.254.3.4 172.20.1.1',
    );
    expect(maskText('peer 2001:db8:85a3::8a2e:370:7334 ok')).toBe('peer 2001:db8:x:x:x:x:x:x ok');
    expect(maskText('fe80::1 ::1 fd00::2 at 06:41:03 mac aa:bb:cc:dd:ee:ff')).toBe(
      'fe80::1 ::1 fd00::2 at 06:41:03 mac aa:bb:cc:dd:ee:ff',
    );
  });

  it('masks objects by key name', () => {
    expect(
      maskValue({ auth: { password: 'p', user: 'admin' }, wifi: [{ key: 'k', ssid: 's' }] }),
    ).toEqual({ auth: { password: 'xxxx', user: 'admin' }, wifi: [{ key: 'xxxx', ssid: 's' }] });
  });
});
