/**
 * Receive buffers of werift's ICE sockets. Checked against werift 0.23.0 (lib/index.mjs:
 * RTCPeerConnection.iceTransports[].connection.protocols[].transport.socket, the dgram socket
 * of each gathered UDP candidate); ice-sockets.test.ts fails when the path is gone.
 *
 * Why: werift creates its UDP sockets with the kernel's default receive buffer (212,992 bytes,
 * net.core.rmem_default). Counted in the kernel's per-packet truesize, that holds about 256
 * small datagrams: while the event loop is held for a second or so (the input bench on the
 * 2-core machine at load 11-17 saw server stalls of 0.4-3 s) the browser's data channel packets
 * beyond that are dropped (Udp RcvbufErrors: 1,744 in one run, 107 TSNs in a row), and SCTP's
 * loss recovery (gap reports, then retransmission timeouts of a second and more) held every
 * later key event behind the lost ones: the data channel's p99 of 0.7-3.2 s in those runs,
 * where the WebSocket (TCP: no loss) waited only as long as the stall. With the bigger buffer
 * the packets wait in the kernel until the loop reads them (no RcvbufErrors since).
 */
import { Socket } from 'node:dgram';

/**
 * Bytes asked for (the kernel doubles it for its bookkeeping and caps it at
 * net.core.rmem_max: on a stock Debian 212,992, so the buffer at least doubles there).
 */
export const ICE_RECV_BUFFER_BYTES = 1 << 20;

/** What the sockets are reached through (werift 0.23.0's RTCPeerConnection). */
interface IceTransportsOwner {
  iceTransports: readonly { connection: object }[];
}

/** The bound dgram sockets of `pc`'s gathered UDP candidates. */
export function iceSockets(pc: IceTransportsOwner): Socket[] {
  const sockets: Socket[] = [];
  for (const ice of pc.iceTransports) {
    const { protocols } = ice.connection as { protocols?: readonly unknown[] };
    for (const protocol of protocols ?? []) {
      const socket = (protocol as { transport?: { socket?: unknown } } | null)?.transport?.socket;
      if (socket instanceof Socket) sockets.push(socket);
    }
  }
  return sockets;
}

/**
 * Sets the receive buffer of each of `pc`'s ICE sockets to `bytes` (see the file comment);
 * returns the sizes the kernel granted (empty: werift's internals are not as checked).
 */
export function enlargeIceReceiveBuffers(
  pc: IceTransportsOwner,
  bytes = ICE_RECV_BUFFER_BYTES,
): number[] {
  const granted: number[] = [];
  for (const socket of iceSockets(pc)) {
    try {
      if (socket.getRecvBufferSize() < bytes) socket.setRecvBufferSize(bytes);
      granted.push(socket.getRecvBufferSize());
    } catch {
      // closed already, or the kernel refused: that socket keeps its buffer
    }
  }
  return granted;
}
