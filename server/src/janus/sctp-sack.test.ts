import { describe, expect, it } from 'vitest';
import { RTCPeerConnection } from 'werift';
import { JanusPeer } from './peer';
import { delaySacks, isPatchableSctp } from './sctp-sack';
import { waitFor, weriftBrowserPeer } from './test-support';
import { SILENT_LOGGER as silent } from '../log';

/** The server side's werift SCTP instance (private in JanusPeer). */
function sctpOf(peer: JanusPeer): { sendSack(): Promise<void>; sentQueue?: unknown[] } {
  return (peer as unknown as { pc: RTCPeerConnection }).pc.sctpTransport!.sctp as never;
}

describe('delayed SACKs on werift SCTP', () => {
  it('finds every member it patches on the installed werift', async () => {
    // fails when a werift upgrade renames what sctp-sack.ts relies on
    const pc = new RTCPeerConnection({ iceServers: [] });
    try {
      pc.createDataChannel('hid');
      const sctp = pc.sctpTransport?.sctp;
      expect(isPatchableSctp(sctp)).toBe(true);
      expect(delaySacks(sctp)).toBe(true);
      expect(delaySacks(sctp)).toBe(true); // once per instance
    } finally {
      await pc.close();
    }
    expect(delaySacks({ receiveDataChunk: () => undefined })).toBe(false);
  });

  it('delivers every message at once, in order, with a SACK per two packets at most', async () => {
    const server = await JanusPeer.create({
      iceServers: [],
      video: false,
      profileLevelId: '42e01f',
      log: silent,
    });
    const browser = await weriftBrowserPeer(server.offerSdp);
    try {
      const frames: number[] = [];
      server.on('input', (frame) => frames.push(frame[1]!));
      let connected = false;
      server.on('connected', () => (connected = true));
      await server.applyAnswer(browser.answer);
      await waitFor(() => connected, 20_000);
      const channel = await browser.channel;
      await waitFor(() => channel.readyState === 'open', 10_000);
      const sctp = sctpOf(server);
      let sacks = 0;
      const sendSack = sctp.sendSack.bind(sctp);
      sctp.sendSack = () => {
        sacks += 1;
        return sendSack();
      };
      // 40 key frames (op 1), one packet each, as fast as the channel takes them
      for (let i = 0; i < 40; i += 1) channel.send(Buffer.from([0x01, i, 0x4b, 0x65, 0x79, 0x41]));
      await waitFor(() => frames.length === 40, 10_000);
      expect(frames).toEqual(Array.from({ length: 40 }, (_, i) => i));
      // every packet acknowledged (the browser side holds nothing unacknowledged)...
      const browserSctp = (browser.pc.sctpTransport!.sctp as unknown as { sentQueue: unknown[] })
        .sentQueue;
      await waitFor(() => browserSctp.length === 0, 5_000);
      // ...with at most one SACK for two packets (werift alone sent one per packet)
      expect(sacks).toBeGreaterThan(0);
      expect(sacks).toBeLessThanOrEqual(21);
      // a lone message is acknowledged too, by the delay timer
      const before = sacks;
      channel.send(Buffer.from([0x01, 40, 0x4b, 0x65, 0x79, 0x41]));
      await waitFor(() => frames.length === 41 && browserSctp.length === 0 && sacks > before);
    } finally {
      await server.close();
      await browser.pc.close();
    }
  }, 40_000);
});
