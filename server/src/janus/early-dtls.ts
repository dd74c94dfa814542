/**
 * The browser's first DTLS flight, kept for werift's DTLS server until it starts (issue 28 item
 * 2), patched onto werift's RTCDtlsTransport at run time. Checked against werift 0.23.0
 * (lib/index.mjs, class RTCDtlsTransport: state, start, iceTransport.connection.onData);
 * early-dtls.test.ts fails when any of them is gone.
 *
 * Why: werift starts its DTLS transport only after its own ICE agent (the controlling one) has
 * nominated a pair, and only then listens for DTLS records. The browser is writable one
 * connectivity check earlier and sends its ClientHello at once: werift dropped it, and
 * Chromium sent it again after its first retransmission timeout (50 ms). In the page-load
 * bench's parts the server's DTLS started 5-12 ms after the page's ICE was connected and the
 * ClientHello came 43-50 ms after that, every load; the handshake itself took 10-20 ms.
 *
 * With the patch, DTLS records (first byte 20-63, RFC 7983) that arrive while the transport is
 * still `new` are kept (EARLY_DTLS_MAX of them at most, each at most a UDP datagram) and handed
 * to the DTLS server right after it is created, in the order they came. A record kept twice (the
 * browser's own retransmission) is answered twice, as DTLS allows: the server resends its flight.
 */

/** What the patch touches of werift's event type (rx.mini Event). */
interface WeriftEvent<T extends unknown[]> {
  subscribe(fn: (...args: T) => void): { unSubscribe(): void };
  execute(...args: T): void;
}

/** The parts of werift 0.23.0's RTCDtlsTransport the patch touches. */
interface WeriftDtlsTransport {
  state: string;
  start(): Promise<void>;
  iceTransport: { connection: { onData: WeriftEvent<[Buffer]> } };
}

/** Early records kept at most: a ClientHello and a few retransmissions of it. */
export const EARLY_DTLS_MAX = 8;

/** RFC 7983: a DTLS record's first byte is 20-63. */
function isDtlsRecord(buf: Buffer): boolean {
  return buf.length > 0 && buf[0]! >= 20 && buf[0]! <= 63;
}

export function isPatchableDtlsTransport(value: unknown): value is WeriftDtlsTransport {
  const t = value as Partial<WeriftDtlsTransport> | null | undefined;
  const onData = t?.iceTransport?.connection?.onData as Partial<WeriftEvent<[Buffer]>> | undefined;
  return (
    typeof t?.state === 'string' &&
    typeof t.start === 'function' &&
    typeof onData?.subscribe === 'function' &&
    typeof onData.execute === 'function'
  );
}

const patched = new WeakSet<object>();

/**
 * Keeps the early DTLS records of `transport` (a werift RTCDtlsTransport that has not started)
 * for its start. False when it is not what this file was checked against (nothing is patched).
 */
export function keepEarlyDtls(transport: unknown): boolean {
  if (!isPatchableDtlsTransport(transport)) return false;
  if (patched.has(transport)) return true;
  patched.add(transport);
  if (transport.state !== 'new') return true;
  const onData = transport.iceTransport.connection.onData;
  const early: Buffer[] = [];
  const keeping = onData.subscribe((buf) => {
    if (transport.state === 'new' && early.length < EARLY_DTLS_MAX && isDtlsRecord(buf)) {
      early.push(Buffer.from(buf));
    }
  });
  const start = transport.start;
  transport.start = function startWithEarlyRecords(this: WeriftDtlsTransport) {
    // werift's start() creates its DTLS server and its record listener before its first await
    const started = start.call(this);
    keeping.unSubscribe();
    for (const buf of early.splice(0)) onData.execute(buf);
    return started;
  };
  return true;
}
