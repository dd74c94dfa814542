/**
 * /webterm in Chromium (testbed target): the device's shell in xterm.js over the ttyd socket,
 * typed into and echoed back; the serial tab says the testbed has no serial line.
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
  await loginViaUi(page, server);
}, 60_000);
afterAll(async () => {
  await stopConsole(browser, server);
});

const screen = (p: Page, target: string) =>
  p.locator(`[data-testid="terminal-${target}"] .xterm-rows`).first();

describe('/webterm', () => {
  it('runs a command typed into the device shell', async () => {
    await page.goto(`${server.url}/webterm`);
    await page
      .locator('[data-testid="terminal-device"][data-status="open"]')
      .waitFor({ state: 'visible', timeout: 15_000 });
    await byTestId(page, 'terminal-device').click();
    await page.keyboard.type('echo kvm-$((6*7))');
    await page.keyboard.press('Enter');
    await expect
      .poll(async () => (await screen(page, 'device').textContent()) ?? '', { timeout: 10_000 })
      .toContain('kvm-42');
  }, 60_000);

  it('says in the serial tab that the testbed has no serial line', async () => {
    await page.getByRole('tab', { name: 'Remote computer (serial)' }).click();
    await expect
      .poll(async () => (await screen(page, 'serial').textContent()) ?? '', { timeout: 10_000 })
      .toContain('no serial line');
    await byTestId(page, 'terminal-reconnect-serial').waitFor({ state: 'visible' });
  }, 30_000);
});
