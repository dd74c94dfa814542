/**
 * Wake-on-LAN from the console (testbed target): the device list with SPEC 5's rules and a real
 * magic packet, caught by a UDP socket on loopback standing in for the sleeping computer.
 */
import { createSocket, type Socket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Browser } from './fixtures/browser';
import { byTestId, expectText, loginViaUi, startConsole, stopConsole } from './fixtures/console';
import type { ServerProcess } from './fixtures/server';

let server: ServerProcess;
let browser: Browser;
let page: Page;
let nic: Socket;
const packets: Buffer[] = [];

beforeAll(async () => {
  nic = createSocket('udp4');
  nic.on('message', (msg) => packets.push(msg));
  await new Promise<void>((r) => nic.bind(0, '127.0.0.1', r));
  ({ server, browser, page } = await startConsole({
    config: `wol:\n  address: 127.0.0.1\n  port: ${nic.address().port}\n`,
  }));
  await loginViaUi(page, server);
  await byTestId(page, 'toolbar-wol').click();
  await byTestId(page, 'wol-panel').waitFor({ state: 'visible' });
}, 60_000);
afterAll(async () => {
  nic.close();
  await stopConsole(browser, server);
});

async function add(p: Page, name: string, mac: string): Promise<void> {
  await byTestId(p, 'wol-add-name').fill(name);
  await byTestId(p, 'wol-add-mac').fill(mac);
  await byTestId(p, 'wol-add-submit').click();
}

describe('Wake-on-LAN', () => {
  it('adds a device, refuses a bad or duplicate MAC, and wakes it with a magic packet', async () => {
    await add(page, 'Office PC', 'aa:bb:cc:dd:ee:0f');
    await byTestId(page, 'wol-row-AA:BB:CC:DD:EE:0F').waitFor({ state: 'visible' });
    await add(page, 'Broken', 'aa:bb:cc:dd:ee');
    await expectText(page, 'Enter six pairs of hex digits separated by colons');
    await add(page, 'Twin', 'AA:BB:CC:DD:EE:0F');
    await expectText(page, 'A device with this MAC address already exists');

    await byTestId(page, 'wol-wake-AA:BB:CC:DD:EE:0F').click();
    await expect.poll(() => packets.length, { timeout: 10_000 }).toBe(1);
    const packet = packets[0]!;
    expect(packet.length).toBe(102);
    expect(packet.subarray(0, 6).toString('hex')).toBe('ffffffffffff');
    expect(packet.subarray(6).toString('hex')).toBe('aabbccddee0f'.repeat(16));
    const devices = await page.evaluate(async () => {
      const res = await fetch('/api/wol/devices');
      return ((await res.json()) as { result: { devices: unknown[] } }).result.devices;
    });
    expect(devices).toEqual([{ name: 'Office PC', mac: 'AA:BB:CC:DD:EE:0F' }]);
  }, 60_000);
});
