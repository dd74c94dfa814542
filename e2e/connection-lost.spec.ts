/**
 * SPEC 4 heartbeat: when the server stops, the connection-lost overlay appears (no pong for
 * 10 s); when it comes back, the console notices by itself (login polled every 1 s), re-creates
 * its sockets and the overlay goes away, without a reload and without a new login.
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
});
