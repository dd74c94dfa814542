/**
 * Device administration from the console (testbed target, Chromium): Ethernet switched to a
 * static address and back to DHCP on the server's own network namespace (dnsmasq as the LAN's
 * router, docs/system.md), the pending change confirmed from the banner; a Wi-Fi network of the
 * test radio joined (and a wrong key refused); a time zone set as a UTC offset and as a city.
 * The confirmation window is 15 s (of 60), so that one change left unconfirmed is seen to come
 * back by itself within the test.
 * The server's shutdown removes the namespaces it made: checked after it stops.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { Browser } from './fixtures/browser';
import { byTestId, expectText, initDevice, loginViaUi, openSettings } from './fixtures/console';
import { ServerProcess } from './fixtures/server';
import { netnsNames } from '../server/src/drivers/network/netns';

const run = promisify(execFile);
/** The confirmation window: long enough to click Keep on a loaded machine, short to wait out. */
const CONFIRM_S = 15;

let server: ServerProcess | undefined;
let browser: Browser | undefined;
let page: Page;

async function namespaces(): Promise<string[]> {
  const { stdout } = await run('ip', ['netns', 'list'], { timeout: 5_000 });
  return stdout
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter(Boolean);
}

/** GET through the page (its session cookie), the envelope's result. */
async function apiGet<T>(p: Page, path: string): Promise<T> {
  return p.evaluate(async (url) => {
    const res = await fetch(url);
    const body = (await res.json()) as { result: unknown };
    return body.result as T;
  }, path);
}

interface NetworkConfig {
  is_dhcp: boolean;
  ip_address: string;
  state: string;
  pending: unknown;
}

const network = async (): Promise<NetworkConfig> =>
  (await apiGet<{ config: NetworkConfig }>(page, '/api/system/get_network_config')).config;

beforeAll(async () => {
  // each part kept as soon as it exists, so that afterAll stops it whatever failed after
  server = await ServerProcess.start({ config: `system:\n  confirm_timeout_s: ${CONFIRM_S}\n` });
  await initDevice(server);
  browser = await Browser.launch();
  page = await browser.page();
  await loginViaUi(page, server);
  await openSettings(page);
}, 60_000);

afterAll(async () => {
  const dataDir = server?.dataDir;
  try {
    await browser?.close();
  } finally {
    // the server's shutdown removes the namespaces it made
    await server?.dispose();
  }
  if (dataDir) {
    const names = netnsNames(dataDir);
    const left = (await namespaces()).filter((n) => n === names.dev || n === names.lan);
    expect(left).toEqual([]);
  }
}, 60_000);

describe('Ethernet', () => {
  it('switches to a static address, confirmed from the banner, and back to DHCP', async () => {
    // The testbed starts its namespaces at the first use (the group's first read, which finds
    // no address yet) and holds a DHCP lease about a second later. The group reads the network
    // again after its own actions only, so the page is reloaded once the lease is held.
    await expect
      .poll(async () => (await network()).ip_address, { timeout: 30_000 })
      .toMatch(/^192\.168\.8\.1\d\d$/);
    // the namespaces the afterAll check expects gone are there now
    const names = netnsNames(server!.dataDir);
    expect(await namespaces()).toEqual(expect.arrayContaining([names.dev, names.lan]));
    await page.reload();
    await openSettings(page);
    const address = byTestId(page, 'network-address');
    await expect
      .poll(async () => (await address.textContent()) ?? '', { timeout: 10_000 })
      .toMatch(/^192\.168\.8\.1\d\d$/);

    await byTestId(page, 'network-mode-static').check({ force: true });
    await byTestId(page, 'network-ip').fill('192.168.8.50');
    await byTestId(page, 'network-netmask').fill('255.255.255.0');
    await byTestId(page, 'network-gateway').fill('192.168.8.1');
    await byTestId(page, 'network-dns1').fill('192.168.8.1');
    await byTestId(page, 'network-apply').click();

    // the banner: the new address to go to, and Keep
    const banner = byTestId(page, 'network-pending');
    await banner.waitFor({ state: 'visible', timeout: 15_000 });
    expect(await banner.textContent()).toContain('192.168.8.50');
    await byTestId(page, 'network-confirm').click();
    await banner.waitFor({ state: 'hidden', timeout: 10_000 });
    await expect
      .poll(async () => (await address.textContent()) ?? '', { timeout: 10_000 })
      .toContain('192.168.8.50');
    const kept = await network();
    expect(kept).toMatchObject({ is_dhcp: false, ip_address: '192.168.8.50', pending: null });

    await byTestId(page, 'network-mode-dhcp').check({ force: true });
    await byTestId(page, 'network-apply').click();
    await banner.waitFor({ state: 'visible', timeout: 15_000 });
    await byTestId(page, 'network-confirm').click();
    await banner.waitFor({ state: 'hidden', timeout: 10_000 });
    await expect
      .poll(async () => (await address.textContent()) ?? '', { timeout: 15_000 })
      .toMatch(/192\.168\.8\.1\d\d/);
    await expect
      .poll(async () => (await network()).ip_address, { timeout: 10_000 })
      .toMatch(/^192\.168\.8\.1\d\d$/);
    expect((await network()).is_dhcp).toBe(true);
  }, 90_000);

  it('puts the previous settings back by itself when a change is not confirmed', async () => {
    const address = byTestId(page, 'network-address');
    const before = (await network()).ip_address;
    await byTestId(page, 'network-mode-static').check({ force: true });
    await byTestId(page, 'network-ip').fill('192.168.8.51');
    await byTestId(page, 'network-netmask').fill('255.255.255.0');
    await byTestId(page, 'network-gateway').fill('192.168.8.1');
    await byTestId(page, 'network-apply').click();
    const banner = byTestId(page, 'network-pending');
    await banner.waitFor({ state: 'visible', timeout: 15_000 });
    await expect
      .poll(async () => (await address.textContent()) ?? '', { timeout: 10_000 })
      .toBe('192.168.8.51');
    // the countdown runs from the window (CONFIRM_S) down
    const seconds = Number(await byTestId(page, 'network-countdown').getAttribute('data-seconds'));
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThanOrEqual(CONFIRM_S);

    await byTestId(page, 'network-reverted').waitFor({
      state: 'visible',
      timeout: (CONFIRM_S + 15) * 1000,
    });
    expect(await byTestId(page, 'network-reverted').textContent()).toContain(
      'the previous settings came back',
    );
    await expect
      .poll(async () => (await address.textContent()) ?? '', { timeout: 15_000 })
      .toBe(before);
    expect(await network()).toMatchObject({ is_dhcp: true, ip_address: before, pending: null });
  }, 90_000);
});

describe('Wi-Fi (test radio)', () => {
  it('joins KVM-Lab with its key; a wrong key says the join failed', async () => {
    const status = byTestId(page, 'wifi-status');
    await expect
      .poll(async () => (await status.textContent()) ?? '', { timeout: 10_000 })
      .toContain('Test radio (simulated)');
    await byTestId(page, 'wifi-scan').click();
    const lab = byTestId(page, 'wifi-network-KVM-Lab');
    await lab.waitFor({ state: 'visible', timeout: 30_000 });

    // the row's Join button: enabled once no other Wi-Fi operation (the scan) runs
    const join = byTestId(page, 'wifi-connect-KVM-Lab');
    const password = byTestId(page, 'wifi-password');

    // a wrong key first
    await join.click();
    await password.fill('not-the-key');
    await byTestId(page, 'wifi-join').click();
    await expectText(page, 'Wi-Fi join failed', 15_000);
    await password.waitFor({ state: 'hidden', timeout: 10_000 });

    await join.click();
    await password.fill('kvm-lab-pass');
    await byTestId(page, 'wifi-join').click();
    await password.waitFor({ state: 'hidden', timeout: 15_000 });
    await expect.poll(() => status.getAttribute('data-ssid'), { timeout: 15_000 }).toBe('KVM-Lab');
    const wire = await apiGet<{ state: number; ssid: string }>(page, '/api/repeater/get_status');
    expect(wire).toMatchObject({ state: 2, ssid: 'KVM-Lab' });
  }, 60_000);
});

describe('time zone', () => {
  async function pick(testId: string, option: string, search?: string): Promise<void> {
    await byTestId(page, testId).click();
    if (search) await page.keyboard.type(search);
    await page
      .locator('.ant-select-dropdown:visible .ant-select-item-option')
      .filter({ hasText: option })
      .first()
      .click();
  }

  it('sets UTC+08:00, then a city zone, and the device time zone follows', async () => {
    const current = byTestId(page, 'timezone-current');
    await pick('timezone-offset', 'UTC+08:00', '+08');
    await byTestId(page, 'timezone-offset-apply').click();
    await expect
      .poll(() => current.getAttribute('data-zone'), { timeout: 10_000 })
      .toBe('Etc/GMT-8');
    expect(await current.textContent()).toContain('UTC+08:00');
    const eight = await apiGet<{ time_zone: number; timezone_name: string }>(
      page,
      '/api/system/time',
    );
    // SPEC 3's inverted sign for Etc zones (wire-protocol.md §5.13)
    expect(eight).toMatchObject({ time_zone: -480, timezone_name: 'Etc/GMT-8' });

    await pick('timezone-city', 'Asia/Tokyo', 'Tokyo');
    await byTestId(page, 'timezone-city-apply').click();
    await expect
      .poll(() => current.getAttribute('data-zone'), { timeout: 10_000 })
      .toBe('Asia/Tokyo');
    expect(await current.textContent()).toContain('UTC+09:00');
    const city = await apiGet<{ time_zone: number; timezone_name: string }>(
      page,
      '/api/system/time',
    );
    // a city zone: local − UTC, east positive
    expect(city).toMatchObject({ time_zone: 540, timezone_name: 'Asia/Tokyo' });
  }, 60_000);
});
