import { describe, expect, it } from 'vitest';
import { RTCPeerConnection } from 'werift';
import { EARLY_DTLS_MAX, isPatchableDtlsTransport, keepEarlyDtls } from './early-dtls';

/** werift's event type as far as the patch uses it. */
class FakeEvent {
  private readonly fns = new Set<(buf: Buffer) => void>();

  subscribe(fn: (buf: Buffer) => void): { unSubscribe(): void } {
    this.fns.add(fn);
    return { unSubscribe: () => this.fns.delete(fn) };
  }

  execute(buf: Buffer): void {
    for (const fn of [...this.fns]) fn(buf);
  }
}

/**
 * A DTLS transport as werift 0.23.0 has it: start() makes its DTLS endpoint, which listens to
 * the ICE connection from then on, before its first await.
 */
class FakeDtlsTransport {
  state = 'new';
  readonly onData = new FakeEvent();
  readonly iceTransport = { connection: { onData: this.onData } };
  readonly received: number[] = [];

  async start(): Promise<void> {
    this.state = 'connecting';
    this.onData.subscribe((buf) => this.received.push(buf[1]!));
    await Promise.resolve();
  }
}

/** A datagram whose first byte says what it is (RFC 7983) and whose second numbers it. */
const datagram = (first: number, n: number): Buffer => Buffer.from([first, n, 0xfe, 0xfd]);

describe('early DTLS records for werift (the ClientHello before the DTLS server listens)', () => {
  it('finds every member it patches on the installed werift', async () => {
    // fails when a werift upgrade renames what early-dtls.ts relies on
    const pc = new RTCPeerConnection({ iceServers: [] });
    try {
      pc.createDataChannel('hid');
      await pc.setLocalDescription(await pc.createOffer());
      const [transport] = pc.dtlsTransports;
      expect(isPatchableDtlsTransport(transport)).toBe(true);
      expect(keepEarlyDtls(transport)).toBe(true);
      expect(keepEarlyDtls(transport)).toBe(true); // once per instance
    } finally {
      await pc.close();
    }
    expect(keepEarlyDtls({ state: 'new', start: () => undefined })).toBe(false);
    expect(keepEarlyDtls(null)).toBe(false);
  });

  it('hands the records that came before start() to the DTLS endpoint, in order, once', async () => {
    const transport = new FakeDtlsTransport();
    expect(keepEarlyDtls(transport)).toBe(true);
    transport.onData.execute(datagram(22, 1)); // a ClientHello
    transport.onData.execute(datagram(0x00, 2)); // STUN: ICE's own, not kept
    transport.onData.execute(datagram(0x80, 3)); // RTP/RTCP: not kept
    transport.onData.execute(datagram(22, 4)); // the browser's retransmission
    await transport.start();
    expect(transport.received).toEqual([1, 4]);
    // from now on the endpoint hears the connection itself: nothing is handed twice
    transport.onData.execute(datagram(22, 5));
    expect(transport.received).toEqual([1, 4, 5]);
  });

  it('keeps EARLY_DTLS_MAX records at most, and nothing for a transport that started', async () => {
    const flood = new FakeDtlsTransport();
    keepEarlyDtls(flood);
    for (let i = 0; i < EARLY_DTLS_MAX * 4; i += 1) flood.onData.execute(datagram(23, i));
    await flood.start();
    expect(flood.received).toEqual(Array.from({ length: EARLY_DTLS_MAX }, (_, i) => i));

    const started = new FakeDtlsTransport();
    await started.start();
    expect(keepEarlyDtls(started)).toBe(true);
    started.onData.execute(datagram(22, 9));
    expect(started.received).toEqual([9]);
  });
});
