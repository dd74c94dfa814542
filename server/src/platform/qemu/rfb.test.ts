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
  /** Writes to the (one) client, after its handshake. */
  send: (data: Buffer) => void;
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
    send: (data) => sockets[0]?.write(data),
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
    // SetPixelFormat (20 bytes) and SetEncodings (4 + 4 * 5) come first
    await vi.waitFor(() => expect(vnc.received().length).toBe(20 + 24));
    client.wakeRefresh();
    await vi.waitFor(() => expect(vnc.received().length).toBe(52));
    expect([...vnc.received().subarray(44)]).toEqual([6, 0, 0, 0, 0, 0, 0, 0]);
  });

  it('sends nothing once closed', async () => {
    const vnc = await fakeVnc();
    cleanup.push(vnc.close);
    const client = await RfbClient.connect(vnc.path);
    client.close();
    expect(() => client.wakeRefresh()).not.toThrow();
  });
});

describe('RfbClient updates', () => {
  it('applies a Hextile rectangle that arrives in pieces, then says the update is in', async () => {
    const vnc = await fakeVnc();
    cleanup.push(vnc.close);
    const client = await RfbClient.connect(vnc.path);
    cleanup.push(async () => client.close());
    await vi.waitFor(() => expect(vnc.received().length).toBe(20 + 24));
    const updates: number[] = [];
    client.on('update', (at) => updates.push(at));
    // FramebufferUpdate, one rectangle: the whole 4x2 screen, encoding 5, one tile with a
    // background 0x00112233 and one foreground pixel 0x00ffffff at (2,1)
    const head = Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0, 2, 0, 0, 0, 5]);
    const tile = Buffer.from([2 | 4 | 8, 0x33, 0x22, 0x11, 0, 0xff, 0xff, 0xff, 0, 1, 0x21, 0]);
    const bytes = Buffer.concat([head, tile]);
    for (let i = 0; i < bytes.length; i += 5) {
      vnc.send(bytes.subarray(i, i + 5));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await vi.waitFor(() => expect(updates).toHaveLength(1));
    const pixel = (x: number, y: number): number =>
      client.framebuffer.readUInt32LE((y * 4 + x) * 4);
    expect(pixel(0, 0)).toBe(0x112233);
    expect(pixel(3, 1)).toBe(0x112233);
    expect(pixel(2, 1)).toBe(0xffffff);
  });
});
