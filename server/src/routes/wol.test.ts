import { execFile, spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WOL_DEVICES_MAX, WOL_NAME_MAX } from '@kvm/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { netnsNames } from '../drivers/network/netns';
import { listNamespaces, namespaceSkipReason } from '../platform/netns/test-support';
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
    app = await newApp(dataDir, {
      wol: { network: 'host', address: '127.0.0.1', port: nic.port },
    });
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
    app = await newApp(dataDir, {
      wol: { network: 'host', address: '127.0.0.1', port: nic.port },
    });
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

  it('refuses control characters in names, trims white space, bounds names and the list', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const post = (path: string, q: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: `/api/wol/${path}?${new URLSearchParams(q)}`,
        headers: { token },
      });
    for (const name of [
      'a\u0000b',
      'line\nbreak',
      'c\rr',
      'tab\there',
      'esc\u001b[31m',
      'del\u007f',
      'n\u0085el',
      's\u2028ep',
      'p\u2029ara',
      'rtl\u202eexe.txt',
      'iso\u2066x',
    ]) {
      const res = await post('add', { name, mac: '11:22:33:44:55:66' });
      expect(res.statusCode, JSON.stringify(name)).toBe(400);
      expect(res.json().result.error_msg).toMatch(/control characters/);
    }
    let res = await post('add', { name: 'x'.repeat(WOL_NAME_MAX + 1), mac: '11:22:33:44:55:66' });
    expect(res.statusCode).toBe(400);
    res = await post('add', { name: '  Desk \n', mac: '11:22:33:44:55:66' });
    expect(res.statusCode).toBe(200);
    expect(res.json().result.device.name).toBe('Desk');
    res = await post('rename', { mac: '11:22:33:44:55:66', name: 'Desk\u0000' });
    expect(res.statusCode).toBe(400);
    // A repeated key is not a MAC.
    res = await app.inject({
      method: 'POST',
      url: '/api/wol/add?name=x&mac=11:22:33:44:55:67&mac=11:22:33:44:55:68',
      headers: { token },
    });
    expect(res.statusCode).toBe(400);

    for (let i = 1; i < WOL_DEVICES_MAX; i++) {
      const mac = `02:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`;
      expect((await post('add', { name: `pc ${i}`, mac })).statusCode).toBe(200);
    }
    res = await post('add', { name: 'one too many', mac: '02:00:00:01:00:00' });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error_msg).toMatch(/At most 100/);
    const list = (await app.inject({ url: '/api/wol/devices', headers: { token } })).json();
    expect(list.result.devices.length).toBe(WOL_DEVICES_MAX);
  });

  it('holds a stored list to the same rules when it loads', async () => {
    const dataDir = await tempDataDir();
    const devices: unknown[] = [
      null,
      'junk',
      { name: 'evil\u0000name', mac: 'AA:AA:AA:AA:AA:01' },
      { name: 'ok', mac: 'aa:aa:aa:aa:aa:02' },
      { name: 'twin', mac: 'AA:AA:AA:AA:AA:02' },
      ...Array.from({ length: 150 }, (_, i) => ({
        name: `n${i}`,
        mac: `02:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`,
      })),
    ];
    await writeFile(join(dataDir, 'wol.json'), JSON.stringify({ devices }));
    app = await newApp(dataDir);
    const token = await initAndLogin(app);
    const list = (await app.inject({ url: '/api/wol/devices', headers: { token } })).json().result
      .devices as Array<{ name: string; mac: string }>;
    expect(list.length).toBe(WOL_DEVICES_MAX);
    expect(list[0]).toEqual({ name: 'ok', mac: 'AA:AA:AA:AA:AA:02' });
    expect(list.some((d) => d.name.includes('\u0000') || d.name === 'twin')).toBe(false);
  });

  it('reports a send failure', async () => {
    app = await newApp(undefined, { wol: { network: 'host', interface: 'no-such-nic0' } });
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

describe('GL /api/wol/list', () => {
  it("answers the same list as /api/wol/devices in GL's shape", async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const empty = await app.inject({ url: '/api/wol/list', headers: { token } });
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual({ ok: true, result: { devices: [] } });
    await app.inject({
      method: 'POST',
      url: '/api/wol/add?name=NAS&mac=00:11:22:33:44:55',
      headers: { token },
    });
    const list = await app.inject({ url: '/api/wol/list', headers: { token } });
    expect(list.json().result).toEqual({
      devices: [{ ip: '', mac: '00:11:22:33:44:55', name: 'NAS' }],
    });
  });
});

/** A UDP socket on every address of this computer: a packet on the host's network would land. */
async function hostListener(): Promise<{ port: number; packets: Buffer[]; close: () => void }> {
  const socket = createSocket('udp4');
  const packets: Buffer[] = [];
  socket.on('message', (msg) => packets.push(msg));
  await new Promise<void>((r) => socket.bind(0, '0.0.0.0', r));
  return { port: socket.address().port, packets, close: () => socket.close() };
}

describe('Wake-on-LAN on the developer targets: the device network, never the host', () => {
  it('a network not managed here cannot wake (400), and nothing reaches the host', async () => {
    const host = await hostListener();
    try {
      app = await newApp(undefined, {
        system: { network: 'disabled' },
        wol: { address: '127.0.0.1', port: host.port },
      });
      const token = await initAndLogin(app);
      const res = await app.inject({
        method: 'POST',
        url: '/api/wol/wake?mac=AA:BB:CC:DD:EE:0F',
        headers: { token },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        ok: false,
        result: { error: 'WolUnavailableError' },
      });
      expect(res.json().result.error_msg).toMatch(/wol\.network: host/);
      // a loopback packet would be here by now (the host test above polls for it)
      await new Promise((r) => setTimeout(r, 300));
      expect(host.packets).toHaveLength(0);
    } finally {
      host.close();
    }
  });
});

const skipReason = namespaceSkipReason();
if (skipReason) console.warn(`wol.test.ts namespace tests skipped: ${skipReason}`);

/** Prints `listening`, then the hex of each datagram with its sender, one per line. */
const LISTEN_JS = `
const s = require('node:dgram').createSocket('udp4');
s.on('message', (m, r) => console.log(r.address + ' ' + m.toString('hex')));
s.bind(Number(process.argv[1]), '0.0.0.0', () => console.log('listening'));
setTimeout(() => process.exit(0), Number(process.argv[2]));`;

/** A UDP listener inside namespace `ns` (ends by itself after `lifeMs`). */
async function namespaceListener(
  ns: string,
  port: number,
  lifeMs = 60_000,
): Promise<{ lines: string[]; stop: () => void }> {
  const child = spawn(
    'ip',
    ['netns', 'exec', ns, process.execPath, '-e', LISTEN_JS, String(port), String(lifeMs)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  let err = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => lines.push(...d.split('\n').filter(Boolean)));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const stop = () => child.kill('SIGKILL');
  try {
    await vi.waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`listener in ${ns} exited: ${err}`);
        expect(lines).toContain('listening');
      },
      { timeout: 20_000, interval: 50 },
    );
  } catch (e) {
    stop();
    throw e;
  }
  return { lines: lines, stop };
}

describe.skipIf(skipReason !== null)(
  'Wake-on-LAN from the device namespace (testbed, netns)',
  () => {
    let dataDir = '';
    let stops: (() => void)[] = [];
    afterEach(async () => {
      for (const stop of stops) stop();
      stops = [];
      await app?.close();
      // the namespaces go with the app; a failed close must not leave them behind
      const names = netnsNames(dataDir);
      for (const ns of [names.dev, names.lan]) {
        if ((await listNamespaces()).includes(ns)) {
          await new Promise((r) => execFile('ip', ['netns', 'del', ns], r));
        }
      }
      await rm(dataDir, { recursive: true, force: true });
    });

    it('sends from eth0 to the LAN broadcast, where the LAN namespace sees it, and not on the host', async () => {
      const host = await hostListener();
      stops.push(host.close);
      dataDir = await tempDataDir();
      // the default wol config but the port (9 may be taken on a CI machine)
      app = await newApp(dataDir, { system: { network: 'netns' }, wol: { port: host.port } });
      const token = await initAndLogin(app);
      const names = netnsNames(dataDir);
      // the namespaces start at first use; the device needs its lease to have a broadcast
      await vi.waitFor(
        async () => {
          const res = await app.inject({
            url: '/api/system/get_network_config',
            headers: { token },
          });
          expect(res.json().result.config.ip_address).toMatch(/^192\.168\.8\./);
        },
        { timeout: 30_000, interval: 200 },
      );
      const lan = await namespaceListener(names.lan, host.port);
      stops.push(lan.stop);

      const res = await app.inject({
        method: 'POST',
        url: '/api/wol/wake?mac=aa:bb:cc:dd:ee:0f',
        headers: { token },
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().result.sent).toEqual({
        mac: 'AA:BB:CC:DD:EE:0F',
        address: '192.168.8.255',
        port: host.port,
      });
      const packet = `ff`.repeat(6) + 'aabbccddee0f'.repeat(16);
      await vi.waitFor(() => expect(lan.lines.filter((l) => l !== 'listening')).toHaveLength(1), {
        timeout: 10_000,
        interval: 50,
      });
      const [from, hex] = lan.lines.find((l) => l !== 'listening')!.split(' ');
      expect(from).toMatch(/^192\.168\.8\.1\d\d$/); // the device's DHCP address, eth0
      expect(hex).toBe(packet);
      // the host's own network saw nothing (a listener on all its addresses, same port)
      expect(host.packets).toHaveLength(0);
    }, 90_000);
  },
);
