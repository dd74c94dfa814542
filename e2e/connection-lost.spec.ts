/**
 * SPEC 4 heartbeat: when the server stops, the connection-lost overlay appears (no pong for
 * 10 s); when it comes back, the console notices by itself (login polled every 1 s), re-creates
 * its sockets and the overlay goes away, without a reload and without a new login. A console
 * whose React tree cannot be fetched after the video's start says so and tries again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Browser } from './fixtures/browser';
import { byTestId, loginViaUi, startConsole, stopConsole } from './fixtures/console';
import type { ServerProcess } from './fixtures/server';

let server: ServerProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ({ server, browser, page } = await startConsole());
});
afterAll(() => stopConsole(browser, server));

describe('connection lost', () => {
  it('shows the overlay when the server stops and clears it when the server is back', async () => {
    await loginViaUi(page, server);
    // mark the page so a reload would be noticed
    await page.evaluate(() => {
      (window as unknown as { e2eMarker: number }).e2eMarker = 42;
    });
    expect(await byTestId(page, 'connection-lost').isVisible()).toBe(false);

    await server.stop();
    const stoppedAt = Date.now();
    await byTestId(page, 'connection-lost').waitFor({ state: 'visible', timeout: 20_000 });
    const shownAfter = Date.now() - stoppedAt;
    // SPEC: lost after 10 s without a pong (pings every 2 s): not before ~8 s, not long after 12 s
    expect(shownAfter).toBeGreaterThan(7_000);
    expect(shownAfter).toBeLessThan(15_000);
    // three hints, and the refresh button (not embedded, default setting on)
    expect(await page.locator('[data-testid="connection-lost"] li').count()).toBe(3);
    expect(await byTestId(page, 'connection-lost-refresh').isVisible()).toBe(true);

    await server.launch();
    await byTestId(page, 'connection-lost').waitFor({ state: 'hidden', timeout: 15_000 });
    expect(await page.evaluate(() => (window as unknown as { e2eMarker?: number }).e2eMarker)).toBe(
      42,
    );
    await byTestId(page, 'main-page').waitFor({ state: 'visible' });
  });

  it('a console whose React tree could not be fetched says so and loads it when it can', async () => {
    // main.tsx imports the React tree after the video's start: a failed fetch of it is asked
    // for again every 2 s, with the reason on the page meanwhile (not a blank page)
    const tree = '**/assets/render-*.js';
    let refused = 0;
    await page.route(tree, (route) => {
      refused += 1;
      return route.abort('connectionreset');
    });
    await page.reload();
    await expect
      .poll(() => page.locator('#root').textContent(), { timeout: 20_000, interval: 200 })
      .toContain('Connection to the device was lost');
    await expect.poll(() => refused, { timeout: 10_000, interval: 200 }).toBeGreaterThan(1);
    await page.evaluate(() => {
      (window as unknown as { e2eMarker: number }).e2eMarker = 7;
    });
    await page.unroute(tree);
    await byTestId(page, 'main-page').waitFor({ state: 'visible', timeout: 20_000 });
    // the same page, not a reload
    expect(await page.evaluate(() => (window as unknown as { e2eMarker?: number }).e2eMarker)).toBe(
      7,
    );
  });
});
