/**
 * Wake-on-LAN from the console (testbed target, default Wake-on-LAN config): the device list with
 * SPEC 5's rules and a real magic packet. The packet leaves from the device's network namespace
 * to its LAN's broadcast and is counted by a UDP listener in the LAN namespace; a listener on
 * every address of this computer, on the same port, must see nothing. Without root (no
 * namespaces) the console's wake answers that it cannot send, and still nothing reaches the host.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { netnsNames } from '../server/src/drivers/network/netns';
import type { Browser } from './fixtures/browser';
import { byTestId, expectText, loginViaUi, startConsole, stopConsole } from './fixtures/console';
import { poll, removeLeftNamespaces, waitForDeviceLease } from './fixtures/netns';
import type { ServerProcess } from './fixtures/server';

const asRoot = process.getuid?.() === 0;

let server: ServerProcess;
let browser: Browser;
let page: Page;
let hostNic: Socket;
const hostPackets: Buffer[] = [];
let lanListener: ChildProcess | null = null;
const lanLines: string[] = [];
let names: { dev: string; lan: string } | null = null;

/** Prints `listening`, then `<sender> <hex>` per datagram; ends by itself after a minute. */
const LISTEN_JS = `
const s = require('node:dgram').createSocket('udp4');
s.on('message', (m, r) => console.log(r.address + ' ' + m.toString('hex')));
s.bind(Number(process.argv[1]), '0.0.0.0', () => console.log('listening'));
setTimeout(() => process.exit(0), 60000);`;

beforeAll(async () => {
  hostNic = createSocket('udp4');
  hostNic.on('message', (msg) => hostPackets.push(msg));
  await new Promise<void>((r) => hostNic.bind(0, '0.0.0.0', r));
  const port = hostNic.address().port;
  ({ server, browser, page } = await startConsole({ config: `wol:\n  port: ${port}\n` }));
  names = netnsNames(server.dataDir);
  await loginViaUi(page, server);
  if (asRoot) {
    await waitForDeviceLease(page);
    lanListener = spawn(
      'ip',
      ['netns', 'exec', names.lan, process.execPath, '-e', LISTEN_JS, String(port)],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    lanListener.stdout!.setEncoding('utf8');
    lanListener.stdout!.on('data', (d: string) => lanLines.push(...d.split('\n').filter(Boolean)));
    await poll('the LAN listener', () => lanLines.includes('listening'), 20_000);
  }
  await byTestId(page, 'toolbar-wol').click();
  await byTestId(page, 'wol-panel').waitFor({ state: 'visible' });
}, 90_000);

afterAll(async () => {
  lanListener?.kill('SIGKILL');
  hostNic?.close();
  await stopConsole(browser, server);
  // The server removes its namespaces when it stops; one that did not must not stay behind.
  if (asRoot && names) {
    expect(await removeLeftNamespaces(names)).toEqual([]);
  }
});

async function add(p: Page, name: string, mac: string): Promise<void> {
  await byTestId(p, 'wol-add-name').fill(name);
  await byTestId(p, 'wol-add-mac').fill(mac);
  await byTestId(p, 'wol-add-submit').click();
}

describe('Wake-on-LAN', () => {
  it('adds a device, refuses a bad or duplicate MAC, and wakes it on the device network only', async () => {
    await add(page, 'Office PC', 'aa:bb:cc:dd:ee:0f');
    await byTestId(page, 'wol-row-AA:BB:CC:DD:EE:0F').waitFor({ state: 'visible' });
    await add(page, 'Broken', 'aa:bb:cc:dd:ee');
    await expectText(page, 'Enter six pairs of hex digits separated by colons');
    await add(page, 'Twin', 'AA:BB:CC:DD:EE:0F');
    await expectText(page, 'A device with this MAC address already exists');

    await byTestId(page, 'wol-wake-AA:BB:CC:DD:EE:0F').click();
    if (asRoot) {
      const packets = () => lanLines.filter((l) => l !== 'listening');
      await poll('the packet in the LAN namespace', () => packets().length === 1, 15_000);
      const [from, hex] = packets()[0]!.split(' ');
      expect(from).toMatch(/^192\.168\.8\.1\d\d$/);
      expect(hex).toBe('ff'.repeat(6) + 'aabbccddee0f'.repeat(16));
    } else {
      const error = await page.evaluate(async () => {
        const res = await fetch('/api/wol/wake?mac=AA:BB:CC:DD:EE:0F', { method: 'POST' });
        return ((await res.json()) as { result: { error: string } }).result.error;
      });
      expect(error).toBe('WolUnavailableError');
    }
    // the host's network never saw it (a listener on all of this computer's addresses)
    expect(hostPackets).toHaveLength(0);
    const devices = await page.evaluate(async () => {
      const res = await fetch('/api/wol/devices');
      return ((await res.json()) as { result: { devices: unknown[] } }).result.devices;
    });
    expect(devices).toEqual([{ name: 'Office PC', mac: 'AA:BB:CC:DD:EE:0F' }]);
  }, 60_000);

  it('the left panel opens the toolbox and the external devices (issue 27, SPEC 2)', async () => {
    // The drawer's wake-on-LAN panel goes first (its mask covers the toolbar), so the page
    // holds one device list.
    await page.locator('.ant-drawer-close').click();
    await byTestId(page, 'wol-panel').waitFor({ state: 'detached' });

    await byTestId(page, 'toolbar-toolbox').click();
    await byTestId(page, 'toolbox-panel').waitFor({ state: 'visible' });
    const panel = byTestId(page, 'left-panel');
    expect(await panel.evaluate((el) => el.getBoundingClientRect().width)).toBe(320);
    for (const group of ['toolbox-clipboard', 'toolbox-shortcuts', 'toolbox-terminal']) {
      await byTestId(page, group).waitFor({ state: 'visible' });
    }
    // Its wake-on-LAN group is the WolPanel, on the device's own list.
    await page
      .locator('[data-testid="toolbox-wol"] [data-testid="wol-panel"]')
      .waitFor({ state: 'visible' });
    // The clipboard types through the device (testbed HID) like the toolbar's paste.
    await byTestId(page, 'toolbox-paste-text').fill('abc');
    await byTestId(page, 'toolbox-paste-send').click();
    await byTestId(page, 'toolbox-paste-result').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await byTestId(page, 'toolbox-paste-result').innerText()).toContain(
      '3 characters typed',
    );
    // A group folds from the keyboard.
    await byTestId(page, 'toolbox-terminal-toggle').focus();
    await page.keyboard.press('Enter');
    await byTestId(page, 'toolbox-terminal-device').waitFor({ state: 'hidden' });

    // The testbed has no ATX board, no fingerbot and no KVM switch: each group says so.
    await byTestId(page, 'toolbar-external').click();
    await byTestId(page, 'external-panel').waitFor({ state: 'visible' });
    expect(await byTestId(page, 'toolbox-panel').count()).toBe(0);
    for (const none of ['external-atx-none', 'external-fingerbot-none', 'external-switch-none']) {
      await byTestId(page, none).waitFor({ state: 'visible', timeout: 15_000 });
    }
    await byTestId(page, 'toolbar-external').click();
    await panel.waitFor({ state: 'detached' });
  }, 60_000);
});
