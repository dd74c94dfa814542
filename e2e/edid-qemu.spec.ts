/**
 * EDID on the QEMU target through the console in Chromium: the 1920x1080 preset picked in the
 * display identity group, then the VM's reset button from the power menu (the VM reads the EDID
 * at its next power cycle, docs/system.md), and the stream becomes 1920x1080: the streamer's
 * `source.resolution` (GET /api/streamer) and the <video> element's own videoWidth/Height.
 * When the VM already runs at 1920x1080 it is first moved to 1600x1200 through the API, so the
 * change the console makes is visible.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { Browser } from './fixtures/browser';
import { byTestId, initDevice, loginViaUi, openSettings } from './fixtures/console';
import { ServerProcess } from './fixtures/server';
import { serialLog, stopQemuConsole, until } from './fixtures/qemu';

let server: ServerProcess | undefined;
let browser: Browser | undefined;
let page: Page;

/** The streamer's source resolution as `WxH` ('' while offline). */
async function sourceResolution(p: Page): Promise<string> {
  return p.evaluate(async () => {
    const res = await fetch('/api/streamer');
    const s = (
      (await res.json()) as {
        result: {
          streamer: {
            source: { online: boolean; resolution: { width: number; height: number } };
          } | null;
        };
      }
    ).result.streamer;
    return s?.source.online ? `${s.source.resolution.width}x${s.source.resolution.height}` : '';
  });
}

/** The size the page's <video> decodes (its intrinsic size), `WxH`. */
async function videoSize(p: Page): Promise<string> {
  return p.evaluate(() => {
    const v = document.querySelector<HTMLVideoElement>('[data-testid="video-webrtc"]');
    return v ? `${v.videoWidth}x${v.videoHeight}` : '';
  });
}

async function reset(p: Page): Promise<void> {
  await byTestId(p, 'toolbar-power').click();
  await byTestId(p, 'power-reset').click();
  await byTestId(p, 'confirm-ok').click();
}

beforeAll(async () => {
  // each part kept as soon as it exists, so that afterAll stops it whatever failed after
  server = await ServerProcess.start({ target: 'qemu' });
  await initDevice(server);
  browser = await Browser.launch();
  page = await browser.page();
  await loginViaUi(page, server);
  await until(
    server,
    'guest ready',
    async () => (await serialLog(server)).includes('guest ready'),
    120_000,
  );
  await byTestId(page, 'video-webrtc').waitFor({ state: 'visible', timeout: 30_000 });
}, 180_000);
afterAll(async () => {
  await stopQemuConsole(browser, server);
}, 60_000);

describe('EDID on the QEMU guest', () => {
  it('the 1920x1080 preset makes the stream 1920x1080 after a reset', async () => {
    await expect.poll(() => sourceResolution(page), { timeout: 30_000 }).not.toBe('');
    if ((await sourceResolution(page)) === '1920x1080') {
      // already there: another mode first, so the console's change shows
      const other = await page.evaluate(async () => {
        const list = (await (await fetch('/api/upgrade/edid_list')).json()) as Array<{
          key: string;
          content: string;
        }>;
        const preset = list.find((e) => e.key === 'E1600x1200')!;
        const res = await fetch('/api/upgrade/edid', {
          method: 'POST',
          body: new URLSearchParams({ edid: preset.content }),
        });
        return res.status;
      });
      expect(other).toBe(200);
      await reset(page);
      await expect
        .poll(() => sourceResolution(page), { timeout: 120_000, interval: 500 })
        .toBe('1600x1200');
    }
    const before = await sourceResolution(page);
    expect(before).not.toBe('1920x1080');
    // the page's <video> shows that mode too
    await expect.poll(() => videoSize(page), { timeout: 30_000 }).toBe(before);

    await openSettings(page);
    // The box is disabled until the group has read the device's EDID state, and a click on a
    // disabled box opens nothing: click until the list is open.
    const option = page
      .locator('.ant-select-dropdown:visible .ant-select-item-option')
      .filter({ hasText: '1920x1080' });
    await expect
      .poll(
        async () => {
          if ((await page.locator('.ant-select-dropdown:visible').count()) === 0) {
            await byTestId(page, 'edid-preset').click();
          }
          return option.count();
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toBeGreaterThan(0);
    await option.first().click();
    await byTestId(page, 'edid-apply').click();
    // saved, waiting for the VM's next power cycle
    await expect
      .poll(
        () =>
          page.evaluate(async () => {
            const res = await fetch('/api/upgrade/get_edid');
            return ((await res.json()) as { result: { preset: string | null } }).result.preset;
          }),
        { timeout: 10_000 },
      )
      .toBe('E1920x1080');
    // the console says when the VM sees it
    await byTestId(page, 'edid-power-cycle').waitFor({ state: 'visible', timeout: 10_000 });
    await page.keyboard.press('Escape');

    await reset(page);
    await expect
      .poll(() => sourceResolution(page), { timeout: 120_000, interval: 500 })
      .toBe('1920x1080');
    await expect.poll(() => videoSize(page), { timeout: 30_000 }).toBe('1920x1080');
  }, 300_000);
});
