import { describe, expect, it } from 'vitest';
import { maskText, maskValue } from './mask';
import { PRIV, PSK, PUB, SETUP, TSKEY, UAPI_HEX } from './mask-test-kit';

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

describe("log masking: the private-network apps' secrets", () => {
  it.each([
    ['a wg-quick line', `PrivateKey = ${PRIV}`, 'PrivateKey = xxxx'],
    ['a wg-quick line, any case, no spaces', `presharedkey=${PSK}`, 'presharedkey=xxxx'],
    [
      'a configuration in a JSON log line (escaped newlines)',
      `[Interface]\\nPrivateKey = ${PRIV}\\n[Peer]\\nPublicKey = ${PUB}\\nPresharedKey = ${PSK}`,
      `[Interface]\\nPrivateKey = xxxx\\n[Peer]\\nPublicKey = ${PUB}\\nPresharedKey = xxxx`,
    ],
    [
      'a configuration pasted as text',
      `[Interface]\nPrivateKey = ${PRIV}\r\n[Peer]\nPresharedKey = ${PSK}\n`,
      '[Interface]\nPrivateKey = xxxx\r\n[Peer]\nPresharedKey = xxxx\n',
    ],
    [
      'JSON inside a JSON log line',
      `{"msg":"tool said {\\"AuthKey\\":\\"${TSKEY}\\",\\"PrivateKey\\": \\"${PRIV}\\"}"}`,
      '{"msg":"tool said {\\"AuthKey\\":\\"xxxx\\",\\"PrivateKey\\": \\"xxxx\\"}"}',
    ],
    [
      'wg UAPI lines',
      `private_key=${UAPI_HEX}\npreshared_key=${UAPI_HEX}`,
      'private_key=xxxx\npreshared_key=xxxx',
    ],
    [
      'a key after "private key:"',
      `interface: wg0 private key: ${PRIV}`,
      'interface: wg0 private key: xxxx',
    ],
    [
      'a key after a bare "private key"',
      `got private key ${PRIV} from the form`,
      'got private key xxxx from the form',
    ],
    [
      'JSON, camel-cased',
      `{"privateKey":"${PRIV}","presharedKey":"${PSK}","publicKey":"${PUB}"}`,
      `{"privateKey":"xxxx","presharedKey":"xxxx","publicKey":"${PUB}"}`,
    ],
    [
      'a Tailscale auth key as a flag',
      `tailscale up --auth-key ${TSKEY} --login-server https://hs.example`,
      'tailscale up --auth-key xxxx --login-server https://hs.example',
    ],
    [
      'a Tailscale auth key with =',
      `tailscale up --authkey=${TSKEY}`,
      'tailscale up --authkey=xxxx',
    ],
    [
      'a Tailscale key on its own',
      `error: key ${TSKEY.slice(0, 30)}… expired`,
      'error: key xxxx… expired',
    ],
    [
      'a headscale key on its own',
      'headscale: hskey-auth-8mQ2cXbT4sVw-Zk3pL9nR7yH2dF6gJ1aS5eU0iO',
      'headscale: xxxx',
    ],
    [
      "ZeroTier's local API token header",
      'GET /status X-ZT1-Auth: 0123abcdwxyz4567efgh89ij',
      'GET /status X-ZT1-Auth: xxxx',
    ],
    ['TS_AUTHKEY in an environment', `TS_AUTHKEY=${TSKEY}`, 'TS_AUTHKEY=xxxx'],
    [
      'a NetBird setup key as a flag',
      `netbird up --setup-key ${SETUP} --management-url https://nb.example`,
      'netbird up --setup-key xxxx --management-url https://nb.example',
    ],
    ['a NetBird setup key in JSON', `{"setup_key": "${SETUP}"}`, '{"setup_key": "xxxx"}'],
    [
      'NB_SETUP_KEY in an environment',
      `NB_SETUP_KEY=${SETUP} netbird up`,
      'NB_SETUP_KEY=xxxx netbird up',
    ],
  ])('%s', (_name, text, want) => {
    expect(maskText(text)).toBe(want);
  });

  it('keeps words, flags and public facts that only look near a secret', () => {
    for (const text of [
      'the auth key is wrong: ask the admin for a new one',
      '{"has_preshared_key":true,"public_key":"' + PUB + '"}',
      'wireguard: peer ' + PUB + ' handshake after 10 ms',
    ])
      expect(maskText(text)).toBe(text);
  });

  it("masks the apps' secrets in objects by name, only when they are text", () => {
    expect(
      maskValue({
        wireguard: {
          privateKey: PRIV,
          peers: [{ public_key: PUB, preshared_key: PSK, has_preshared_key: true }],
        },
        tailscale: { auth_key: TSKEY, authKey: TSKEY },
        netbird: { setupKey: SETUP, NB_SETUP_KEY: SETUP },
      }),
    ).toEqual({
      wireguard: {
        privateKey: 'xxxx',
        peers: [{ public_key: PUB, preshared_key: 'xxxx', has_preshared_key: true }],
      },
      tailscale: { auth_key: 'xxxx', authKey: 'xxxx' },
      netbird: { setupKey: 'xxxx', NB_SETUP_KEY: 'xxxx' },
    });
  });
});
