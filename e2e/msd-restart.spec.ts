/**
 * Turning virtual media off restarts the device (SPEC 4): the console confirms, the server
 * restarts itself in place (same process, same port), the console waits through the outage and
 * shows the new state. Testbed target.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
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
  await loginViaUi(page, server);
}, 60_000);
afterAll(() => stopConsole(browser, server));

describe('virtual media on and off', () => {
  it('restarts the server in place and the console waits for it', async () => {
    await byTestId(page, 'toolbar-storage').click();
    const panel = byTestId(page, 'storage-panel');
    // the panel says 'on' once the media's state has come (over 1 s on a slower machine)
    await expect
      .poll(() => panel.getAttribute('data-state'), { timeout: 15_000, interval: 100 })
      .toBe('on');
    await byTestId(page, 'msd-enabled').click();
    await byTestId(page, 'confirm-ok').click();
    await expect
      .poll(() => panel.getAttribute('data-state'), { timeout: 60_000, interval: 500 })
      .toBe('off');
    const msd = await page.evaluate(async () => {
      const res = await fetch('/api/msd');
      return ((await res.json()) as { result: { enabled: boolean } }).result;
    });
    expect(msd.enabled).toBe(false);
    // the same process restarted its app in place (main.ts logs both ends; the log file is
    // written asynchronously, so it is polled)
    const log = () => readFile(join(server.dataDir, 'logs', 'server.log'), 'utf8');
    await expect.poll(log, { timeout: 10_000 }).toContain('"msg":"restarting"');
    await expect.poll(log, { timeout: 10_000 }).toContain('"msg":"restarted"');

    await byTestId(page, 'msd-enabled').click();
    await byTestId(page, 'confirm-ok').click();
    await expect
      .poll(() => panel.getAttribute('data-state'), { timeout: 60_000, interval: 500 })
      .toBe('on');
  }, 150_000);
});
