/**
 * /webterm in Chromium (testbed target): the device's shell in xterm.js over the ttyd socket,
 * typed into and echoed back; the serial tab says the testbed has no serial line; a shell with a
 * slow login profile shows "Starting shell…", one that never prints is ended with a message.
 */
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Browser } from './fixtures/browser';
import { byTestId, initDevice, loginViaUi, startConsole, stopConsole } from './fixtures/console';
import { ServerProcess } from './fixtures/server';

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

describe('/webterm with a slow login profile', () => {
  // present: the "profile" hangs for good; absent: it takes 4 s, within the 10 s bound
  const hang = join(tmpdir(), `kvm-e2e-term-hang-${process.pid}`);
  let slow: ServerProcess;
  let slowPage: Page;

  beforeAll(async () => {
    slow = await ServerProcess.start({
      target: 'testbed',
      terminal:
        '  shell: /bin/sh\n' +
        `  args: ["-c", "if [ -e ${hang} ]; then exec sleep 1000; fi; sleep 4; exec /bin/bash --noprofile --norc"]\n` +
        '  start_timeout_s: 10\n',
    });
    await initDevice(slow);
    slowPage = await browser.page();
    await loginViaUi(slowPage, slow);
  }, 60_000);
  afterAll(async () => {
    await rm(hang, { force: true });
    await slowPage?.close();
    await slow?.dispose();
  });

  it('says the shell is starting until it prompts', async () => {
    await slowPage.goto(`${slow.url}/webterm`);
    const notice = byTestId(slowPage, 'terminal-starting-device');
    await notice.waitFor({ state: 'visible', timeout: 15_000 });
    expect(await notice.textContent()).toContain('Starting shell…');
    await slowPage
      .locator('[data-testid="terminal-device"][data-status="open"]')
      .waitFor({ state: 'visible', timeout: 15_000 });
    await notice.waitFor({ state: 'detached', timeout: 5_000 });
    await byTestId(slowPage, 'terminal-device').click();
    await slowPage.keyboard.type('echo slow-$((6*7))');
    await slowPage.keyboard.press('Enter');
    await expect
      .poll(async () => (await screen(slowPage, 'device').textContent()) ?? '', {
        timeout: 10_000,
      })
      .toContain('slow-42');
  }, 60_000);

  it('ends a shell that never prints and says why', async () => {
    await writeFile(hang, '');
    await slowPage.goto(`${slow.url}/webterm`);
    await byTestId(slowPage, 'terminal-starting-device').waitFor({
      state: 'visible',
      timeout: 15_000,
    });
    const closed = byTestId(slowPage, 'terminal-closed-device');
    await closed.waitFor({ state: 'visible', timeout: 30_000 });
    expect(await closed.textContent()).toContain('The shell printed nothing for 10 s');
    await byTestId(slowPage, 'terminal-reconnect-device').waitFor({ state: 'visible' });
  }, 60_000);
});
