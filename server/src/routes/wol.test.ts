import { createSocket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, newApp, tempDataDir } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

/** A UDP socket on loopback standing in for the sleeping computer's network card. */
async function listener(): Promise<{ port: number; packets: Buffer[]; close: () => void }> {
  const socket = createSocket('udp4');
  const packets: Buffer[] = [];
  socket.on('message', (msg) => packets.push(msg));
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  return { port: socket.address().port, packets, close: () => socket.close() };
}

describe('/api/wol', () => {
  it('keeps a device list with SPEC 5 rules and sends a real magic packet', async () => {
    const nic = await listener();
    const dataDir = await tempDataDir();
    app = await newApp(dataDir, { wol: { address: '127.0.0.1', port: nic.port } });
    const token = await initAndLogin(app);
    const post = (q: string) =>
      app.inject({ method: 'POST', url: `/api/wol/${q}`, headers: { token } });

    let res = await post('add?name=Office%20PC&mac=aa:bb:cc:dd:ee:0f');
    expect(res.statusCode).toBe(200);
    expect(res.json().result.device).toEqual({ name: 'Office PC', mac: 'AA:BB:CC:DD:EE:0F' });
    res = await post('add?name=Twin&mac=AA:BB:CC:DD:EE:0F');
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('WolDeviceExistsError');
    for (const mac of [
      'aa:bb:cc:dd:ee',
      'aa-bb-cc-dd-ee-ff',
      'gg:bb:cc:dd:ee:ff',
      'aabbccddeeff',
    ]) {
      expect((await post(`add?name=x&mac=${mac}`)).statusCode, mac).toBe(400);
    }
    expect((await post('add?name=%20%20&mac=11:22:33:44:55:66')).statusCode).toBe(400);
    res = await post('rename?mac=AA:BB:CC:DD:EE:0F&name=Office%20PC');
    expect(res.json().result.error).toBe('WolSameNameError');
    expect((await post('rename?mac=AA:BB:CC:DD:EE:0F&name=Desk')).statusCode).toBe(200);
    expect((await post('rename?mac=01:02:03:04:05:06&name=Desk')).statusCode).toBe(404);

    res = await post('wake?mac=aa:bb:cc:dd:ee:0f');
    expect(res.statusCode).toBe(200);
    expect(res.json().result.sent).toEqual({
      mac: 'AA:BB:CC:DD:EE:0F',
      address: '127.0.0.1',
      port: nic.port,
    });
    await expect.poll(() => nic.packets.length).toBe(1);
    const packet = nic.packets[0]!;
    expect(packet.length).toBe(102);
    expect(packet.subarray(0, 6)).toEqual(Buffer.alloc(6, 0xff));
    for (let i = 0; i < 16; i++) {
      expect(packet.subarray(6 + i * 6, 12 + i * 6).toString('hex')).toBe('aabbccddee0f');
    }

    // the list survives a restart
    await app.close();
    app = await newApp(dataDir, { wol: { address: '127.0.0.1', port: nic.port } });
    const again = await app.inject({ url: '/api/wol/devices', headers: { token } });
    expect(again.json().result.devices).toEqual([{ name: 'Desk', mac: 'AA:BB:CC:DD:EE:0F' }]);
    expect(
      (
        await app.inject({
          method: 'POST',
          url: '/api/wol/remove?mac=AA:BB:CC:DD:EE:0F',
          headers: { token },
        })
      ).statusCode,
    ).toBe(200);
    nic.close();
  });

  it('reports a send failure', async () => {
    app = await newApp(undefined, { wol: { interface: 'no-such-nic0' } });
    const token = await initAndLogin(app);
    const res = await app.inject({
      method: 'POST',
      url: '/api/wol/wake?mac=AA:BB:CC:DD:EE:0F',
      headers: { token },
    });
    expect(res.statusCode).toBe(500);
    expect(res.json().result.error).toBe('WolSendError');
  });
});
