import { describe, expect, it } from 'vitest';
import { janusFeatures } from './ustreamer-plugin';
import { JanusPeer } from './peer';
import {
  MAX_REMOTE_CANDIDATES,
  offeredProfileLevelId,
  toWeriftIceServers,
  unusableCandidate,
  answeredExtensionIds,
  withPlayoutDelay,
} from './peer-params';
import { SILENT_LOGGER as silent } from '../log';

describe('peer helpers', () => {
  it('drops mDNS and TCP candidates, keeps UDP addresses', () => {
    expect(
      unusableCandidate(
        'candidate:1 1 udp 2122260223 0a9c7d10-5d3e-4a5b-9f6e-2f1c9d8e7b6a.local 54321 typ host generation 0',
      ),
    ).toBe('mDNS');
    expect(
      unusableCandidate('candidate:2 1 tcp 1518280447 192.0.2.7 9 typ host tcptype active'),
    ).toBe('not UDP');
    expect(unusableCandidate('candidate:3 1 UDP 2122260223 192.0.2.7 50000 typ host')).toBeNull();
    expect(unusableCandidate('a=candidate:4 1 udp 1 fd00::7 50000 typ host')).toBeNull();
    expect(
      unusableCandidate('candidate:5 1 udp 1686052607 203.0.113.9 40000 typ srflx raddr 0.0.0.0'),
    ).toBeNull();
  });

  it('drops candidates whose address is a host name (werift would look them up)', () => {
    // werift resolves any address *containing* ".local" over mDNS, for 10 s each
    expect(
      unusableCandidate('candidate:6 1 udp 2122260223 printer.local.example 5000 typ host'),
    ).toBe('not an IP address');
    expect(unusableCandidate('candidate:7 1 udp 2122260223 evil.example 5000 typ host')).toBe(
      'not an IP address',
    );
    expect(unusableCandidate('candidate:8 1 udp 2122260223')).toBe('not an IP address');
  });

  it('flattens ICE servers to one url per entry', () => {
    expect(
      toWeriftIceServers([
        { urls: 'stun:stun.example.org:3478' },
        {
          urls: ['turn:192.0.2.1:3478?transport=udp', 'turn:192.0.2.1:3478?transport=tcp'],
          username: 'u',
          credential: 'p',
        },
      ]),
    ).toEqual([
      { urls: 'stun:stun.example.org:3478' },
      { urls: 'turn:192.0.2.1:3478?transport=udp', username: 'u', credential: 'p' },
      { urls: 'turn:192.0.2.1:3478?transport=tcp', username: 'u', credential: 'p' },
    ]);
  });

  it('offers Constrained Baseline or Main as Chromium negotiates them', () => {
    expect(offeredProfileLevelId('42c01e')).toBe('42e01f');
    expect(offeredProfileLevelId('42E01F')).toBe('42e01f');
    expect(offeredProfileLevelId('4d0028')).toBe('4d001f');
  });

  it('reports the first STUN url as features.ice.url', () => {
    expect(janusFeatures([])).toEqual({ audio: false, mic: false });
    expect(
      janusFeatures([
        { urls: ['turn:192.0.2.1:3478'], username: 'u', credential: 'p' },
        { urls: ['stun:stun.l.google.com:19302', 'stun:other:3478'] },
      ]),
    ).toEqual({ audio: false, mic: false, ice: { url: 'stun:stun.l.google.com:19302' } });
  });
});

describe('withPlayoutDelay', () => {
  it('inserts a one-byte-header playout-delay 0/0 extension after the fixed header', () => {
    const pkt = Buffer.from([0x80, 0xe0, 0x00, 0x01, 0, 0, 0, 2, 0, 0, 0, 3, 0x65, 0xaa]);
    const out = withPlayoutDelay(pkt, 6);
    expect([...out]).toEqual([
      0x90, 0xe0, 0x00, 0x01, 0, 0, 0, 2, 0, 0, 0, 3, 0xbe, 0xde, 0x00, 0x01, 0x62, 0, 0, 0, 0x65,
      0xaa,
    ]);
    // a packet that already has an extension is left alone
    expect(withPlayoutDelay(out, 6)).toBe(out);
  });
});

describe('answeredExtensionIds', () => {
  it('reads the extmap ids of the section with the mid, with or without a direction', () => {
    const sdp = [
      'v=0',
      'o=- 1 2 IN IP4 127.0.0.1',
      's=-',
      't=0 0',
      'a=extmap-allow-mixed',
      'm=audio 9 UDP/TLS/RTP/SAVPF 111',
      'a=mid:a',
      'a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level',
      'm=video 9 UDP/TLS/RTP/SAVPF 96',
      'a=mid:v',
      'a=extmap:3/recvonly http://www.webrtc.org/experiments/rtp-hdrext/playout-delay',
      'a=extmap:4 http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time',
      // two-byte header ids (15 and up) are not what the packets here are written in
      'a=extmap:16 urn:example:two-byte',
      'a=extmap:x urn:example:bad',
      '',
    ].join('\r\n');
    expect([...answeredExtensionIds(sdp, 'v')]).toEqual([
      ['http://www.webrtc.org/experiments/rtp-hdrext/playout-delay', 3],
      ['http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time', 4],
    ]);
    expect([...answeredExtensionIds(sdp, 'a')]).toEqual([
      ['urn:ietf:params:rtp-hdrext:ssrc-audio-level', 1],
    ]);
    expect(answeredExtensionIds(sdp, 'c').size).toBe(0);
    expect(answeredExtensionIds('', 'v').size).toBe(0);
  });
});

describe('JanusPeer candidates', () => {
  it('takes at most MAX_REMOTE_CANDIDATES remote candidates', async () => {
    const peer = await JanusPeer.create({
      iceServers: [],
      video: true,
      profileLevelId: '42e01f',
      log: silent,
    });
    try {
      for (let i = 0; i < 500; i += 1) {
        peer.addCandidate({
          candidate: `candidate:${i} 1 udp 2122260223 10.${(i >> 8) & 255}.${i & 255}.1 5000 typ host`,
          sdpMid: 'v',
        });
      }
      expect(peer.remoteCandidateCount).toBe(MAX_REMOTE_CANDIDATES);
    } finally {
      await peer.close();
    }
  });
});

/** The lines of one m= section that do not change per connection (no ICE, keys, ids). */
function sectionLines(sdp: string, media: string): string[] | null {
  const sections = sdp.split(/\r?\n(?=m=)/);
  const section = sections.find((s) => s.startsWith(`m=${media} `));
  if (!section) return null;
  return section
    .split(/\r?\n/)
    .filter((l) => l && !/^a=(candidate|ice-|fingerprint|msid|ssrc|end-of-candidates)/.test(l));
}

describe('JanusPeer audio section', () => {
  async function offer(opts: { video: boolean; audio?: boolean; mic?: boolean }): Promise<string> {
    const peer = await JanusPeer.create({
      iceServers: [],
      profileLevelId: '42e01f',
      log: silent,
      ...opts,
    });
    await peer.close();
    return peer.offerSdp;
  }
  const opus = [
    'a=rtcp:9 IN IP4 0.0.0.0',
    'a=rtcp-mux',
    'a=rtpmap:111 opus/48000/2',
    'a=fmtp:111 minptime=10;useinbandfec=1',
  ];

  it('offers Opus sendonly after the video, in the bundle', async () => {
    const sdp = await offer({ video: true, audio: true });
    expect(sdp).toContain('a=group:BUNDLE v a d\r\n');
    expect(sectionLines(sdp, 'audio')).toEqual([
      'm=audio 9 UDP/TLS/RTP/SAVPF 111',
      'c=IN IP4 0.0.0.0',
      'a=setup:actpass',
      'a=sendonly',
      'a=mid:a',
      ...opus,
    ]);
    expect(sdp.indexOf('m=video')).toBeLessThan(sdp.indexOf('m=audio'));
    expect(sdp.indexOf('m=audio')).toBeLessThan(sdp.indexOf('m=application'));
  });

  it("offers sendrecv for the microphone, and audio alone (GL's second handle)", async () => {
    const sdp = await offer({ video: false, audio: true, mic: true });
    expect(sdp).toContain('a=group:BUNDLE a d\r\n');
    expect(sectionLines(sdp, 'video')).toBeNull();
    expect(sectionLines(sdp, 'audio')).toEqual([
      'm=audio 9 UDP/TLS/RTP/SAVPF 111',
      'c=IN IP4 0.0.0.0',
      'a=setup:actpass',
      'a=sendrecv',
      'a=mid:a',
      ...opus,
    ]);
  });

  it('has no audio section unless asked', async () => {
    const sdp = await offer({ video: true });
    expect(sdp).toContain('a=group:BUNDLE v d\r\n');
    expect(sectionLines(sdp, 'audio')).toBeNull();
  });
});
