/**
 * Virtual media and power end to end on the QEMU target, through the console in Chromium:
 * power the VM off and on from the power menu (the status bar shows no signal while it is off),
 * then upload a bootable ISO, mount it as the CD-ROM, reset the VM and see it boot from the
 * medium. The guest's serial log is the oracle (`guest poweroff`, `guest init <release> rescue`).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Browser } from './fixtures/browser';
import { byTestId, loginViaUi, startConsole, stopConsole } from './fixtures/console';
import { REPO_ROOT, type ServerProcess } from './fixtures/server';

/**
 * How long the power LED may take to show what the test expects, for every LED poll. Measured
 * on a 2-core machine at load 15-21 (QEMU under TCG): one /api/atx fetch from the page up to
 * 2.0 s (the first poll had expect.poll's 1 s default and failed on a loaded machine), the
 * guest's `guest poweroff` line to the LED off 1.1-1.7 s, the power press to the LED on 0.2 s,
 * the LED to the console's power-led 0.04 s; each LED wait 0.04-0.31 s at load 6 and
 * 0.05-0.62 s with 4 more busy processes. 30 s is over ten times the worst of them.
 */
const LED_MS = 30_000;

let server: ServerProcess;
let browser: Browser;
let page: Page;

async function serial(): Promise<string> {
  return (
    await readFile(join(server.dataDir, 'run', 'serial.log'), 'utf8').catch(() => '')
  ).replace(/\r/g, '');
}

async function count(text: string): Promise<number> {
  return (await serial()).split(text).length - 1;
}

/** Polls outside expect.poll so it also works in hooks. */
async function until(what: string, pred: () => Promise<boolean>, timeout = 60_000): Promise<void> {
  const deadline = Date.now() + timeout;
  while (!(await pred())) {
    if (Date.now() > deadline)
      throw new Error(`timed out: ${what}\n${(await serial()).slice(-800)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function atx(p: Page): Promise<{ leds: { power: boolean }; busy: boolean }> {
  return p.evaluate(async () => {
    const res = await fetch('/api/atx');
    return ((await res.json()) as { result: { leds: { power: boolean }; busy: boolean } }).result;
  });
}

async function press(p: Page, item: 'power-short' | 'power-reset'): Promise<void> {
  await byTestId(p, 'toolbar-power').click();
  await byTestId(p, item).click();
  await byTestId(p, 'confirm-ok').click();
}

beforeAll(async () => {
  ({ server, browser, page } = await startConsole({ target: 'qemu' }));
  await loginViaUi(page, server);
  await until('guest ready', async () => (await count('guest ready')) >= 1, 90_000);
  await byTestId(page, 'video-webrtc').waitFor({ state: 'visible', timeout: 30_000 });
}, 150_000);
afterAll(() => stopConsole(browser, server));

describe('power and virtual media on the QEMU guest', () => {
  it('powers the VM off from the power menu (no signal) and on again', async () => {
    await expect.poll(async () => (await atx(page)).leds.power, { timeout: LED_MS }).toBe(true);
    await press(page, 'power-short');
    await until('guest poweroff', async () => (await count('guest poweroff')) === 1);
    await expect.poll(async () => (await atx(page)).leds.power, { timeout: LED_MS }).toBe(false);
    await expect
      .poll(() => byTestId(page, 'power-led').getAttribute('data-on'), { timeout: LED_MS })
      .toBe('false');
    // SPEC 4: no signal once the line has been dark for 5 s
    await expect
      .poll(() => byTestId(page, 'status-stream').getAttribute('data-status'), {
        timeout: 20_000,
      })
      .toBe('noSignal');

    await press(page, 'power-short');
    await expect.poll(async () => (await atx(page)).leds.power, { timeout: LED_MS }).toBe(true);
    await until('booted again', async () => (await count('guest ready')) === 2, 90_000);
    await expect
      .poll(() => byTestId(page, 'status-stream').getAttribute('data-status'), {
        timeout: 30_000,
      })
      .toBe('active');
  }, 180_000);

  it('uploads an ISO, mounts it as the CD-ROM, and the VM boots from it after a reset', async () => {
    await byTestId(page, 'toolbar-storage').click();
    await byTestId(page, 'storage-panel').waitFor({ state: 'visible' });
    // image mounting: the CD-ROM (only .iso/.img/.bin are listed there)
    await byTestId(page, 'msd-mode-cdrom').check({ force: true });
    await byTestId(page, 'msd-upload-input').setInputFiles(
      join(REPO_ROOT, '.cache', 'guest', 'rescue.iso'),
    );
    const row = byTestId(page, 'msd-image-rescue.iso');
    await expect.poll(() => row.getAttribute('data-complete'), { timeout: 60_000 }).toBe('true');
    await byTestId(page, 'msd-mount-rescue.iso').click();
    await until('the guest sees the medium', async () =>
      (await serial()).includes('iso=KVM_RESCUE'),
    );
    const msd = await page.evaluate(async () => {
      const res = await fetch('/api/msd');
      return ((await res.json()) as { result: { drive: { connected: boolean; cdrom: boolean } } })
        .result;
    });
    expect(msd.drive).toMatchObject({ connected: true, cdrom: true });
    await page.keyboard.press('Escape');

    await press(page, 'power-reset');
    await until(
      'booted from the CD-ROM',
      async () => /guest init \S+ rescue/.test(await serial()),
      120_000,
    );
    // up before the next test presses its power button: the guest's ACPI button reader runs
    await until('the rescue guest is up', async () => {
      const boot = (await serial()).split(/guest init \S+ rescue/)[1] ?? '';
      return boot.includes('guest ready') && boot.includes('add Power Button');
    });
  }, 240_000);

  it('the fingerbot presses the VM power button for the press time', async () => {
    await byTestId(page, 'toolbar-fingerbot').click();
    await byTestId(page, 'fingerbot-panel').waitFor({ state: 'visible' });
    await expect.poll(() => byTestId(page, 'fingerbot-battery').innerText()).toContain('100');
    const input = byTestId(page, 'fingerbot-press-time');
    await input.fill('1');
    await page.getByText('Press firmly', { exact: true }).click();
    const before = await count('guest poweroff');
    await byTestId(page, 'fingerbot-press').click();
    await until(
      'the ACPI press powered the guest off',
      async () => (await count('guest poweroff')) === before + 1,
    );
    await expect.poll(async () => (await atx(page)).leds.power, { timeout: LED_MS }).toBe(false);
    const config = await page.evaluate(async () => {
      const res = await fetch('/api/system/get_config');
      return ((await res.json()) as { result: { config: { fingerbot_strength: string } } }).result
        .config;
    });
    expect(config.fingerbot_strength).toBe('HIGH');
  }, 150_000);
});
