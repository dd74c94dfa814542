/**
 * ustreamer's MJPEG surface and kvmd's snapshot in Chromium (testbed target, 1280x720): an
 * `<img src="/streamer/stream?key=…">` shows moving pictures, the snapshot downloads as a JPEG
 * the browser decodes at the screen's size, and a path the console has no page for is a 404,
 * not the console's HTML (issue 13, item 4).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Browser } from './fixtures/browser';
import { loginViaUi, startConsole, stopConsole } from './fixtures/console';
import type { ServerProcess } from './fixtures/server';

let server: ServerProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ({ server, browser, page } = await startConsole({ target: 'testbed' }));
  await loginViaUi(page, server);
  // a light page of the same origin (the session cookie goes with the <img>)
  await page.goto(`${server.url}/streamer/state`);
}, 90_000);
afterAll(() => stopConsole(browser, server));

/** The <img>'s current picture: its size and a checksum of a strip of its pixels. */
function sample(p: Page): Promise<{ width: number; height: number; sum: number }> {
  return p.evaluate(() => {
    const img = document.getElementById('mjpeg') as HTMLImageElement | null;
    if (!img || !img.naturalWidth) return { width: 0, height: 0, sum: 0 };
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const ctx = c.getContext('2d')!;
    ctx.drawImage(img, 0, 0);
    const data = ctx.getImageData(0, 0, c.width, c.height).data;
    let sum = 0;
    for (let i = 0; i < data.length; i += 997) sum = (sum * 31 + data[i]!) >>> 0;
    return { width: c.width, height: c.height, sum };
  });
}

describe('MJPEG and snapshot in Chromium', () => {
  it('an <img> on /streamer/stream shows moving pictures', async () => {
    await page.evaluate(() => {
      document.body.innerHTML = '';
      const img = document.createElement('img');
      img.id = 'mjpeg';
      img.src = `/streamer/stream?key=${Math.random().toString(36).slice(2)}`;
      document.body.appendChild(img);
    });
    await expect
      .poll(async () => (await sample(page)).width, { timeout: 20_000, interval: 200 })
      .toBe(1280);
    expect((await sample(page)).height).toBe(720);
    const seen = new Set<number>();
    await expect
      .poll(
        async () => {
          seen.add((await sample(page)).sum);
          return seen.size;
        },
        { timeout: 15_000, interval: 150 },
      )
      .toBeGreaterThanOrEqual(3);
    const state = await page.evaluate(async () => await (await fetch('/api/streamer')).json());
    expect(state.result.streamer.stream.clients).toBe(1);
    // leaving the page ends the stream (Chromium keeps a removed <img>'s stream open)
    await page.goto(`${server.url}/streamer/state`);
    await expect
      .poll(
        async () =>
          page.evaluate(
            async () => (await (await fetch('/streamer/state')).json()).result.stream.clients,
          ),
        { timeout: 15_000, interval: 200 },
      )
      .toBe(0);
  }, 60_000);

  it('downloads /api/streamer/snapshot as a JPEG of the screen', async () => {
    const shot = await page.evaluate(async () => {
      const res = await fetch('/api/streamer/snapshot?allow_offline=1');
      const blob = await res.blob();
      const head = new Uint8Array(await blob.slice(0, 2).arrayBuffer());
      const bitmap = await createImageBitmap(blob);
      return {
        status: res.status,
        type: res.headers.get('content-type'),
        soi: [head[0], head[1]],
        width: bitmap.width,
        height: bitmap.height,
      };
    });
    expect(shot).toEqual({
      status: 200,
      type: 'image/jpeg',
      soi: [0xff, 0xd8],
      width: 1280,
      height: 720,
    });
  }, 30_000);

  it('answers 404, not the console, for unknown paths', async () => {
    for (const path of ['/streamer/nothing', '/foo/bar.cgi']) {
      const res = await page.goto(`${server.url}${path}`);
      expect(res?.status(), path).toBe(404);
      expect(res?.headers()['content-type'], path).toContain('application/json');
      expect(await res?.text()).not.toContain('<html');
    }
  }, 30_000);
});
