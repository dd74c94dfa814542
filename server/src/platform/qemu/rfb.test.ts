import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RfbClient } from './rfb';

/** A VNC server that does the RFB 3.8 handshake (no auth, 4x2 screen) and records the rest. */
async function fakeVnc(): Promise<{
  path: string;
  received: () => Buffer;
  close: () => Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), 'kvm-rfb-'));
  const path = join(dir, 'vnc.sock');
  const chunks: Buffer[] = [];
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => {
    sockets.push(socket);
    let phase = 0;
    socket.write('RFB 003.008\n');
    socket.on('data', (data: Buffer) => {
      if (phase === 0) {
        // the client's version
        phase = 1;
        socket.write(Buffer.from([1, 1])); // one security type: none
      } else if (phase === 1) {
        phase = 2;
        socket.write(Buffer.alloc(4)); // SecurityResult: ok
      } else if (phase === 2) {
        phase = 3; // ClientInit
        const init = Buffer.alloc(24 + 4);
        init.writeUInt16BE(4, 0);
        init.writeUInt16BE(2, 2);
        init.writeUInt32BE(4, 20);
        init.write('test', 24);
        socket.write(init);
      } else {
        chunks.push(data);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return {
    path,
    received: () => Buffer.concat(chunks),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

describe('RfbClient.wakeRefresh', () => {
  it('sends an empty ClientCutText, the message that resets QEMU’s refresh back-off', async () => {
    const vnc = await fakeVnc();
    cleanup.push(vnc.close);
    const client = await RfbClient.connect(vnc.path);
    cleanup.push(async () => client.close());
    // SetPixelFormat (20 bytes) and SetEncodings (4 + 4 * 4) come first
    await vi.waitFor(() => expect(vnc.received().length).toBe(20 + 20));
    client.wakeRefresh();
    await vi.waitFor(() => expect(vnc.received().length).toBe(48));
    expect([...vnc.received().subarray(40)]).toEqual([6, 0, 0, 0, 0, 0, 0, 0]);
  });

  it('sends nothing once closed', async () => {
    const vnc = await fakeVnc();
    cleanup.push(vnc.close);
    const client = await RfbClient.connect(vnc.path);
    client.close();
    expect(() => client.wakeRefresh()).not.toThrow();
  });
});
