/**
 * The serial tab of /webterm on the QEMU target, in Chromium: the remote computer's serial
 * console (the VM's ttyS0 on QEMU's chardev socket, run/serial.sock) shown in xterm.js.
 *
 * The test guest (scripts/build-guest.mjs) writes boot progress and one line per input event
 * to ttyS0, and runs a prompt-less shell there. So the tab is checked with what the guest
 * prints: an input event after a key sent through the HID API, the boot lines after the VM's
 * reset button on the same connection, and the output of a command typed into the tab.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { Browser } from './fixtures/browser';
import { byTestId, initDevice, loginViaUi } from './fixtures/console';
import { ServerProcess } from './fixtures/server';
import { serialLog, stopQemuConsole, until } from './fixtures/qemu';

let server: ServerProcess | undefined;
let browser: Browser | undefined;
let page: Page;

/** The text xterm.js shows in the serial tab (its rows, without the scrollback). */
const serialScreen = async (p: Page): Promise<string> =>
  (await p.locator('[data-testid="terminal-serial"] .xterm-rows').first().textContent()) ?? '';

/** A page-side API call with the console's session (cookie), answering the HTTP status. */
const post = (p: Page, path: string): Promise<number> =>
  p.evaluate(async (u) => (await fetch(u, { method: 'POST' })).status, path);

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
}, 180_000);
afterAll(async () => {
  await stopQemuConsole(browser, server);
}, 60_000);

describe('/webterm serial tab on the QEMU guest', () => {
  it('shows what the guest writes to its serial line', async () => {
    await page.goto(`${server!.url}/webterm`);
    await page.getByRole('tab', { name: 'Remote computer (serial)' }).click();
    await page
      .locator('[data-testid="terminal-serial"][data-status="open"]')
      .waitFor({ state: 'visible', timeout: 15_000 });

    // a key press through the HID API: the guest logs its evdev events on ttyS0
    // (KEY_A is code 30; `input <eventN> <time> 1 30 1` is the press)
    await expect
      .poll(
        async () => {
          expect(await post(page, '/api/hid/events/send_key?key=KeyA')).toBe(200);
          return serialScreen(page);
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toMatch(/input event\d+ \d+\.\d+ 1 30 1/);

    // the reset button: the boot lines of the guest's init come over the same connection
    expect(await post(page, '/api/atx/click?button=reset')).toBe(200);
    await expect
      .poll(() => serialScreen(page), { timeout: 120_000, interval: 500 })
      .toMatch(/guest init \S+ own/);
    await expect
      .poll(() => serialScreen(page), { timeout: 120_000, interval: 500 })
      .toContain('guest ready');
    // a reset is not a closed line: the tab stays connected
    expect(await page.locator('[data-testid="terminal-serial"]').getAttribute('data-status')).toBe(
      'open',
    );
  }, 300_000);

  it('runs a command typed into the tab on the guest (its serial shell)', async () => {
    await byTestId(page, 'terminal-serial').click();
    await page.keyboard.type('echo serial-$((6*7))');
    await page.keyboard.press('Enter');
    // the tty echoes the line; the guest's shell on ttyS0 runs it
    await expect.poll(() => serialScreen(page), { timeout: 15_000 }).toContain('serial-42');
  }, 60_000);
});
