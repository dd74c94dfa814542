import { describe, expect, it } from 'vitest';
import { RTCPeerConnection } from 'werift';
import { ICE_RECV_BUFFER_BYTES, enlargeIceReceiveBuffers, iceSockets } from './ice-sockets';
import { JanusPeer } from './peer';
import { SILENT_LOGGER as silent } from '../log';

describe('ICE socket receive buffers', () => {
  it('finds the bound UDP sockets of a gathered werift peer and enlarges them', async () => {
    // fails when a werift upgrade moves the sockets ice-sockets.ts reaches
    const pc = new RTCPeerConnection({ iceServers: [] });
    try {
      pc.createDataChannel('hid');
      for (const t of pc.iceTransports) t.connection.stunServer = undefined;
      await pc.setLocalDescription(await pc.createOffer());
      const sockets = iceSockets(pc);
      expect(sockets.length).toBeGreaterThan(0);
      const before = sockets.map((s) => s.getRecvBufferSize());
      const granted = enlargeIceReceiveBuffers(pc);
      expect(granted.length).toBe(sockets.length);
      // the kernel caps the size at net.core.rmem_max, and doubles what it grants
      granted.forEach((size, i) => expect(size).toBeGreaterThan(before[i]!));
    } finally {
      await pc.close();
    }
  });

  it('is applied to every peer the gateway makes', async () => {
    const peer = await JanusPeer.create({
      iceServers: [],
      video: true,
      profileLevelId: '42e01f',
      log: silent,
    });
    try {
      const sockets = iceSockets((peer as unknown as { pc: RTCPeerConnection }).pc);
      expect(sockets.length).toBeGreaterThan(0);
      // the build enlarged them (the default is net.core.rmem_default, 212,992 on Debian)
      for (const s of sockets) expect(s.getRecvBufferSize()).toBeGreaterThan(212_992);
      expect(ICE_RECV_BUFFER_BYTES).toBeGreaterThanOrEqual(1 << 20);
    } finally {
      await peer.close();
    }
  });
});
