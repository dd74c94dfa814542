/**
 * The screen wall end to end (issue 26, docs/cloud.md "Tests and figures (part 2)"): two fleet
 * replicas on real PostgreSQL/NATS/coturn, four simulated devices (fleet/src/sim/: their picture
 * a counter that changes every second; they count the snapshot commands they answer) and the
 * QEMU-backed device (its own server, bound through its cloud panel), every agent on replica A,
 * Chromium signed in on replica B at /wall (so every snapshot crosses NATS).
 *
 * - Every device's tile shows its picture and the pictures change: the simulated tiles with their
 *   counter, the QEMU tile after text is typed into the guest (through the device's own
 *   /api/hid/print: its screen changes).
 * - A hidden tab (the page's `visibilitychange` to hidden) stops the snapshot traffic: the
 *   simulated devices answer no snapshot command while it is hidden, and again once it is
 *   visible.
 * - A click on a tile opens that device's console.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { Browser } from './fixtures/browser';
import { initDevice, PASSWORD } from './fixtures/console';
import { ADMIN, signInBrowser, startFleetWorld, type FleetWorld } from './fixtures/fleet';
import { bindDeviceServer } from './fixtures/fleet-http';
import { startSims, type SimHandle } from './fixtures/fleet-sims';
import { serialLog, stopQemuConsole, until } from './fixtures/qemu';
import { ServerProcess } from './fixtures/server';

/** The fleet asks each watched device for a picture this often (the lowest it allows). */
const INTERVAL_MS = 1000;

let w: FleetWorld;
let sims: SimHandle[];
let qemu: ServerProcess;
let qemuToken = '';
let qemuId = '';
let browser: Browser;
let page: Page;

function tile(id: string) {
  return page.locator(`[data-testid="wall-tile"][data-device-id="${id}"]`);
}

/**
 * The picture a tile shows now, as a hash of its pixels (drawn on a canvas in the page: the
 * fleet's CSP lets no fetch read the object URL), or '' while it has none loaded.
 */
async function tilePicture(id: string): Promise<string> {
  const img = tile(id).locator('[data-testid="wall-image"]');
  if ((await img.count()) === 0) return '';
  return img
    .evaluate(
      (el: HTMLImageElement) => {
        if (!el.complete || el.naturalWidth === 0) return '';
        const c = document.createElement('canvas');
        c.width = el.naturalWidth;
        c.height = el.naturalHeight;
        const g = c.getContext('2d')!;
        g.drawImage(el, 0, 0);
        const px = g.getImageData(0, 0, c.width, c.height).data;
        let h = 0x811c9dc5;
        for (let i = 0; i < px.length; i += 1) h = Math.imul(h ^ px[i]!, 0x01000193) >>> 0;
        return `${c.width}x${c.height}:${h.toString(16)}`;
      },
      null,
      { timeout: 2_000 },
    )
    .catch(() => '');
}

/** Makes the page hidden or visible as switching tabs does (its visibilityState and event). */
async function setHidden(hidden: boolean): Promise<void> {
  await page.evaluate((h) => {
    Object.defineProperty(document, 'visibilityState', {
      configurable: true,
      get: () => (h ? 'hidden' : 'visible'),
    });
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => h });
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

const snapshotsNow = () => sims.map((s) => s.snapshots());

describe('fleet: the screen wall shows and refreshes every device, pauses for a hidden tab', () => {
  beforeAll(async () => {
    w = await startFleetWorld({ replicas: 2, config: { wall: { interval_ms: INTERVAL_MS } } });
    sims = await startSims(w, { count: 4, changeEveryMs: 1000 });
    qemu = await ServerProcess.start({ target: 'qemu' });
    await initDevice(qemu);
    const login = await fetch(`${qemu.url}/api/auth/login`, {
      method: 'POST',
      body: new URLSearchParams({ user: 'admin', passwd: PASSWORD }),
    });
    qemuToken = ((await login.json()) as { result: { token: string } }).result.token;
    qemuId = await bindDeviceServer(w.cloud, qemu.url, qemuToken, ADMIN);
    browser = await Browser.launch({ ignoreHttpsErrors: true });
    await signInBrowser(browser, w.cloud.b.url, ADMIN);
    page = await browser.page();
  }, 240_000);

  afterAll(async () => {
    try {
      await stopQemuConsole(browser, qemu);
    } finally {
      await w?.cloud.dispose();
    }
  }, 120_000);

  it("shows every device's picture and updates it: simulated counters, the QEMU guest's typing", async () => {
    await page.goto(`${w.cloud.b.url}/wall`);
    // every simulated tile shows a picture, then a different one (its counter moved)
    for (const s of sims) {
      await expect.poll(() => tilePicture(s.id), { timeout: 30_000 }).not.toBe('');
      const first = await tilePicture(s.id);
      await expect.poll(() => tilePicture(s.id), { timeout: 15_000 }).not.toBe(first);
      expect(await tile(s.id).getAttribute('data-state')).toBe('online');
    }
    // the QEMU guest's screen: up once its shell is, then changed by typing into it
    await until(
      qemu,
      'the guest has a keyboard',
      async () => (await serialLog(qemu)).includes('add QEMU QEMU USB Keyboard'),
      90_000,
    );
    await expect.poll(() => tilePicture(qemuId), { timeout: 60_000 }).not.toBe('');
    // a settled picture: the same twice in a row three intervals apart
    let before = '';
    await expect
      .poll(
        async () => {
          const a = await tilePicture(qemuId);
          await new Promise((r) => setTimeout(r, 3 * INTERVAL_MS));
          before = await tilePicture(qemuId);
          return a === before;
        },
        { timeout: 60_000 },
      )
      .toBe(true);
    const typed = await fetch(`${qemu.url}/api/hid/print`, {
      method: 'POST',
      headers: { token: qemuToken, 'content-type': 'text/plain' },
      body: 'echo the wall sees this\n',
    });
    expect(typed.status).toBe(200);
    await expect.poll(() => tilePicture(qemuId), { timeout: 30_000 }).not.toBe(before);
  }, 240_000);

  it('a hidden tab stops the snapshot traffic (counted on the devices), a visible one resumes it', async () => {
    await page.goto(`${w.cloud.b.url}/wall`);
    for (const s of sims)
      await expect.poll(() => tilePicture(s.id), { timeout: 30_000 }).not.toBe('');
    // traffic now: every device answers snapshots
    const t0 = snapshotsNow();
    await expect
      .poll(() => snapshotsNow().every((n, i) => n >= t0[i]! + 2), { timeout: 20_000 })
      .toBe(true);

    await setHidden(true);
    // a request already in flight may still be answered: let one interval pass, then count
    await new Promise((r) => setTimeout(r, 2 * INTERVAL_MS));
    const paused = snapshotsNow();
    // five intervals hidden: not one snapshot command reached any device
    await new Promise((r) => setTimeout(r, 5 * INTERVAL_MS));
    expect(snapshotsNow()).toEqual(paused);

    await setHidden(false);
    await expect
      .poll(() => snapshotsNow().every((n, i) => n >= paused[i]! + 2), { timeout: 20_000 })
      .toBe(true);
  }, 120_000);

  it("a click on a tile opens that device's console", async () => {
    await page.goto(`${w.cloud.b.url}/wall`);
    const s = sims[1]!;
    await expect.poll(() => tilePicture(s.id), { timeout: 30_000 }).not.toBe('');
    const [opened] = await Promise.all([
      browser.context.waitForEvent('page', { timeout: 20_000 }).catch(() => page),
      tile(s.id).click(),
    ]);
    await opened.waitForURL(new RegExp(`/d/${s.id}/`), { timeout: 20_000 });
    // the simulated device's own page, through the fleet
    await expect
      .poll(() => opened.locator('body').textContent(), { timeout: 20_000 })
      .toMatch(/simulated/i);
    if (opened !== page) await opened.close();
  }, 60_000);
});
