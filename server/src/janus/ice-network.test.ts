/**
 * `webrtc.port_range` and `webrtc.nat_1to1_ips`: a device behind a 1:1 NAT or a port-mapped
 * container (and the device VM: QEMU forwards a loopback UDP range to it).
 */
import { createSocket, type Socket } from 'node:dgram';
import fastifyWebsocket from '@fastify/websocket';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { buildConfig, ConfigError } from '../config';
import { SILENT_LOGGER as silent } from '../log';
import { janusFeatures, registerJanus } from './gateway';
import { JanusPeer } from './peer';
import {
  IcePortsExhaustedError,
  hostCandidatePorts,
  iceNetworkOf,
  natCandidateLines,
  natSdp,
  parsePortRange,
  type IceNetworkConfig,
} from './peer-params';
import { FakeFeed, JanusTestClient, pluginData, waitFor, weriftBrowserPeer } from './test-support';

const defaults = { dataDir: '/tmp/kvm-data', webDir: '/tmp/kvm-web', keymapsDirs: [] };

describe('webrtc.port_range and webrtc.nat_1to1_ips in the config', () => {
  it('are off by default', () => {
    const cfg = buildConfig({}, defaults);
    expect(cfg.webrtc.port_range).toBeNull();
    expect(cfg.webrtc.nat_1to1_ips).toEqual([]);
    expect(iceNetworkOf(cfg.webrtc)).toEqual({ portRange: null, nat1to1Ips: [] });
  });

  it('take a range and addresses', () => {
    const cfg = buildConfig(
      { webrtc: { port_range: '20000-20007', nat_1to1_ips: ['127.0.0.1', '2001:db8::7'] } },
      defaults,
    );
    expect(iceNetworkOf(cfg.webrtc)).toEqual({
      portRange: [20000, 20007],
      nat1to1Ips: ['127.0.0.1', '2001:db8::7'],
    });
  });

  it.each([
    ['20000', 'is not a port range'],
    ['20010-20000', 'min must be less than max'],
    ['20000-20000', 'min must be less than max'],
    ['80-90', 'within 1024-65535'],
    ['60000-70000', 'within 1024-65535'],
  ])('refuses port_range %s clearly', (range, message) => {
    expect(() => buildConfig({ webrtc: { port_range: range } }, defaults)).toThrow(ConfigError);
    expect(() => buildConfig({ webrtc: { port_range: range } }, defaults)).toThrow(
      new RegExp(`webrtc\\.port_range.*${message}`),
    );
  });

  it.each([
    ['device.example', 'is not an IP address'],
    ['0.0.0.0', 'is unspecified'],
    ['::', 'is unspecified'],
    ['10.0.0.300', 'is not an IP address'],
  ])('refuses nat_1to1_ips entry %s clearly', (ip, message) => {
    expect(() => buildConfig({ webrtc: { nat_1to1_ips: [ip] } }, defaults)).toThrow(
      new RegExp(`webrtc\\.nat_1to1_ips.*${message}`),
    );
  });

  it('parsePortRange gives [min, max]', () => {
    expect(parsePortRange(' 40000-40001 ')).toEqual([40000, 40001]);
  });
});

describe('candidates announced through the 1:1 NAT', () => {
  const host4 = 'a=candidate:abc 1 udp 2130706431 10.0.2.15 40002 typ host';
  const host6 = 'candidate:def 1 udp 2130706431 fec0::15 40003 typ host';
  const relay =
    'a=candidate:ghi 1 udp 16777215 198.51.100.4 3478 typ relay raddr 10.0.2.15 rport 1';

  it('rewrite host candidates of the same family, same port', () => {
    expect(natCandidateLines(host4, ['127.0.0.1'])).toEqual([
      'a=candidate:abc 1 udp 2130706431 127.0.0.1 40002 typ host',
    ]);
    // a bare (trickled) candidate line keeps its form
    expect(natCandidateLines(host6, ['127.0.0.1', '2001:db8::1'])).toEqual([
      'candidate:def 1 udp 2130706431 2001:db8::1 40003 typ host',
    ]);
    // one line per address of the family, each its own foundation
    expect(natCandidateLines(host4, ['203.0.113.5', '198.51.100.9'])).toEqual([
      'a=candidate:abc 1 udp 2130706431 203.0.113.5 40002 typ host',
      'a=candidate:abc1 1 udp 2130706431 198.51.100.9 40002 typ host',
    ]);
  });

  it('leave other types and unmapped families alone', () => {
    expect(natCandidateLines(relay, ['127.0.0.1'])).toEqual([relay]);
    expect(natCandidateLines(host6, ['127.0.0.1'])).toEqual([host6]);
  });

  it('rewrite the SDP: candidates and the c= line, nothing of the inner address left', () => {
    const sdp = [
      'v=0',
      'm=video 40002 UDP/TLS/RTP/SAVPF 96',
      'c=IN IP4 10.0.2.15',
      host4,
      'a=end-of-candidates',
      '',
    ].join('\r\n');
    const out = natSdp(sdp, ['127.0.0.1']);
    expect(out).not.toContain('10.0.2.15');
    expect(out).toContain('c=IN IP4 127.0.0.1\r\n');
    expect(out).toContain('a=candidate:abc 1 udp 2130706431 127.0.0.1 40002 typ host\r\n');
    expect(natSdp(sdp, [])).toBe(sdp);
  });
});

/** `count` consecutive UDP ports free now (bound and released). */
async function freeRange(count: number): Promise<[number, number]> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    const sockets: Socket[] = [];
    let ok = true;
    for (let p = base; p < base + count && ok; p += 1) {
      const s = createSocket('udp4');
      ok = await new Promise<boolean>((resolve) => {
        s.once('error', () => resolve(false));
        s.bind(p, () => resolve(true));
      });
      sockets.push(s);
    }
    await Promise.all(sockets.map((s) => new Promise<void>((r) => s.close(() => r()))));
    if (ok) return [base, base + count - 1];
  }
  throw new Error('no free UDP range');
}

function peer(ice: IceNetworkConfig): Promise<JanusPeer> {
  return JanusPeer.create({
    iceServers: [],
    video: true,
    profileLevelId: '42e01f',
    log: silent,
    ice,
  });
}

describe('JanusPeer behind a 1:1 NAT', () => {
  it('announces the NAT address on ports of the range, and a browser connects through it', async () => {
    const range = await freeRange(8);
    const server = await peer({ portRange: range, nat1to1Ips: ['127.0.0.1'] });
    const browser = await weriftBrowserPeer(server.offerSdp);
    try {
      const candidates = server.offerSdp.split('\r\n').filter((l) => l.startsWith('a=candidate:'));
      expect(candidates.length).toBeGreaterThan(0);
      for (const line of candidates.filter((l) => / 1 udp \d+ [\d.]+ /.test(l))) {
        expect(line).toMatch(/ 127\.0\.0\.1 \d+ typ host/);
      }
      const ports = hostCandidatePorts(server.offerSdp);
      for (const port of ports) {
        expect(port).toBeGreaterThanOrEqual(range[0]);
        expect(port).toBeLessThanOrEqual(range[1]);
      }
      // 127.0.0.1 is the only way in: the browser peer's checks go there and succeed
      let connected = false;
      server.on('connected', () => (connected = true));
      await server.applyAnswer(browser.answer);
      await waitFor(() => connected, 20_000);
      expect(server.connectionState).toBe('connected');
    } finally {
      await server.close();
      await browser.pc.close();
    }
  }, 30_000);

  it('refuses a peer cleanly when the range is exhausted, concurrent creations included', async () => {
    const range = await freeRange(2);
    // one peer holds one port per local address: find how many one takes
    const first = await peer({ portRange: range, nat1to1Ips: [] });
    const perPeer = hostCandidatePorts(first.offerSdp).length;
    await first.close();
    expect(perPeer).toBeGreaterThan(0);
    const fits = Math.floor(2 / perPeer);
    // four at once: the ones that do not fit get the typed error, nothing throws elsewhere
    const results = await Promise.allSettled(
      Array.from({ length: 4 }, () => peer({ portRange: range, nat1to1Ips: [] })),
    );
    const made = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    try {
      expect(made.length).toBeLessThanOrEqual(Math.max(fits, 1));
      expect(refused.length).toBeGreaterThanOrEqual(4 - Math.max(fits, 1));
      for (const err of refused) {
        expect(err).toBeInstanceOf(IcePortsExhaustedError);
        expect(String(err)).toContain(`webrtc.port_range ${range[0]}-${range[1]}`);
      }
    } finally {
      await Promise.all(made.map((p) => p.close()));
    }
    // the ports are back once the peers are gone
    const again = await peer({ portRange: range, nat1to1Ips: [] });
    expect(hostCandidatePorts(again.offerSdp).length).toBe(perPeer);
    await again.close();
  }, 30_000);
});

describe('the Janus gateway with a port range', () => {
  it('gives the viewer over the range an error, and keeps serving the first', async () => {
    const range = await freeRange(2);
    const app = Fastify();
    await app.register(fastifyWebsocket);
    const gateway = registerJanus(app, {
      feed: new FakeFeed(),
      iceServers: () => [],
      features: () => janusFeatures([]),
      onInput: () => undefined,
      onViewerGone: () => undefined,
      log: silent,
      ice: { portRange: range, nat1to1Ips: ['127.0.0.1'] },
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const addr = app.server.address();
    const url = `ws://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/janus/ws`;
    const clients: JanusTestClient[] = [];
    try {
      // one peer per socket until one is refused (a peer takes one port per local address)
      let refusal: Record<string, unknown> | undefined;
      for (let i = 0; i < 3 && !refusal; i += 1) {
        const c = await JanusTestClient.connect(url);
        clients.push(c);
        const { session, handle } = await c.attach('janus.plugin.ustreamer', `oid-${i}`);
        await c.request({
          janus: 'message',
          session_id: session,
          handle_id: handle,
          body: { request: 'watch', params: {} },
        });
        const event = await c.next((m) => {
          const d = pluginData(m);
          return d !== undefined && ('error_code' in d || 'result' in d);
        }, 20_000);
        const data = pluginData(event);
        if (data?.['error_code'] !== undefined) refusal = data;
        else expect(event['jsep']).toMatchObject({ type: 'offer' });
      }
      expect(refusal).toEqual(
        expect.objectContaining({
          error_code: 503,
          error: "Can't create the offer: no free WebRTC port",
        }),
      );
      expect(gateway.peerCount).toBe(clients.length - 1);
      expect(gateway.peerCount).toBeGreaterThan(0);
    } finally {
      for (const c of clients) await c.close();
      await app.close();
    }
  }, 30_000);
});
