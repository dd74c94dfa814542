/**
 * Keyboard and mouse end to end on the QEMU target, through the real console in Chromium and
 * the WebRTC data channel. The guest is the oracle: its `screen` command prints the text of its
 * screen on the serial port, `pick` logs which item a click selected, and its input logger
 * shows every evdev event (docs/drivers.md, Guest image).
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

const KEY_K = 37; // linux/input-event-codes.h

async function serial(): Promise<string[]> {
  const text = await readFile(join(server.dataDir, 'run', 'serial.log'), 'utf8').catch(() => '');
  return text.replace(/\r/g, '').split('\n');
}

/** Waits until the serial lines after `mark` satisfy `pred` (usable in hooks too). */
async function serialAfter(mark: number, pred: (lines: string[]) => boolean, timeout = 20_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const lines = (await serial()).slice(mark);
    if (pred(lines)) return lines;
    if (Date.now() > deadline)
      throw new Error(`serial: timed out; last lines:\n${lines.slice(-15).join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Types ASCII text with real key events (Shift where a US keyboard needs it). */
async function typeKeys(p: Page, text: string): Promise<void> {
  const shifted: Record<string, string> = { _: 'Minus', '!': 'Digit1', ':': 'Semicolon' };
  const plain: Record<string, string> = {
    ' ': 'Space',
    '-': 'Minus',
    '\n': 'Enter',
    '.': 'Period',
  };
  for (const ch of text) {
    if (/[a-z]/.test(ch)) await p.keyboard.press(`Key${ch.toUpperCase()}`);
    else if (/[A-Z]/.test(ch) || shifted[ch]) {
      await p.keyboard.down('Shift');
      await p.keyboard.press(shifted[ch] ?? `Key${ch}`);
      await p.keyboard.up('Shift');
    } else if (/[0-9]/.test(ch)) await p.keyboard.press(`Digit${ch}`);
    else if (plain[ch]) await p.keyboard.press(plain[ch]);
    else throw new Error(`no key for ${JSON.stringify(ch)}`);
  }
}

/** The guest's screen text, one string per row. */
async function guestScreen(p: Page): Promise<string[]> {
  const mark = (await serial()).length;
  await typeKeys(p, 'screen\n');
  const lines = await serialAfter(mark, (l) => l.includes('screen end'));
  const begin = lines.findIndex((l) => l.startsWith('screen begin'));
  return lines.slice(begin + 1, lines.indexOf('screen end'));
}

/** Page coordinates of a guest pixel, through the letterboxed <video>. */
async function guestPointToPage(p: Page, gx: number, gy: number) {
  const video = byTestId(p, 'video-webrtc');
  const box = (await video.boundingBox())!;
  const { w, h } = await video.evaluate((el) => ({
    w: (el as HTMLVideoElement).videoWidth,
    h: (el as HTMLVideoElement).videoHeight,
  }));
  const scale = Math.min(box.width / w, box.height / h);
  const left = box.x + (box.width - w * scale) / 2;
  const top = box.y + (box.height - h * scale) / 2;
  return { x: left + (gx + 0.5) * scale, y: top + (gy + 0.5) * scale };
}

beforeAll(async () => {
  ({ server, browser, page } = await startConsole({ target: 'qemu' }));
  await loginViaUi(page, server);
  await byTestId(page, 'video-webrtc').waitFor({ state: 'visible', timeout: 45_000 });
  await page.waitForFunction(
    () =>
      Number(document.querySelector('[data-testid="video-webrtc"]')?.getAttribute('data-frames')) >
      0,
    null,
    { timeout: 45_000 },
  );
  // the guest's shell is up once its USB keyboard is (the prompt follows at once)
  await serialAfter(0, (l) => l.some((x) => /add QEMU QEMU USB Keyboard/.test(x)), 60_000);
  await new Promise((r) => setTimeout(r, 1500));
  // capture: focus the picture, as a user clicks into it
  await byTestId(page, 'video-area').focus();
}, 150_000);
afterAll(() => stopConsole(browser, server));

describe('keyboard and mouse on the QEMU guest', () => {
  it('types with the keyboard and the guest shows the text', async () => {
    await expect
      .poll(() => byTestId(page, 'capture-indicator').getAttribute('data-state'))
      .toBe('captured-active');
    await typeKeys(page, 'echo Kvm-Typed_42!\n');
    const rows = await guestScreen(page);
    expect(rows).toContain('guest# echo Kvm-Typed_42!');
    expect(rows).toContain('Kvm-Typed_42!');
  }, 60_000);

  it('pastes through the paste dialog and the guest shows the text', async () => {
    await byTestId(page, 'toolbar-paste').click();
    await byTestId(page, 'paste-text').fill('echo Pasted: 7 words, Shift+AltGr ok\n');
    await byTestId(page, 'paste-send').click();
    await expect
      .poll(() => byTestId(page, 'paste-result').isVisible(), { timeout: 20_000 })
      .toBe(true);
    await byTestId(page, 'paste-close').click();
    await byTestId(page, 'video-area').focus();
    const rows = await guestScreen(page);
    expect(rows).toContain('Pasted: 7 words, Shift+AltGr ok');
  }, 60_000);

  it('a click changes the selection in the guest', async () => {
    const mark = (await serial()).length;
    await typeKeys(page, 'pick\n');
    await serialAfter(mark, (l) => l.some((x) => x.startsWith('pick ready')));
    // item 3 is on text row 22 of the guest: pixel rows 336-351
    const at = await guestPointToPage(page, 200, 343);
    await page.mouse.move(at.x, at.y);
    await page.mouse.down();
    await page.mouse.up();
    await serialAfter(mark, (l) => l.includes('pick selected 3'));
    const item1 = await guestPointToPage(page, 200, 151);
    await page.mouse.move(item1.x, item1.y);
    await page.mouse.down();
    await page.mouse.up();
    const lines = await serialAfter(mark, (l) => l.includes('pick selected 1'));
    expect(lines.indexOf('pick selected 3')).toBeLessThan(lines.indexOf('pick selected 1'));
    await page.mouse.down({ button: 'right' });
    await page.mouse.up({ button: 'right' });
    await serialAfter(mark, (l) => l.includes('pick done'));
  }, 60_000);

  it('the virtual keyboard is drawn in the chosen keymap, latches Shift, and sends shortcuts', async () => {
    const saved = await page.evaluate(async () => {
      const res = await fetch('/api/system/get_config');
      const { result } = (await res.json()) as { result: { config: Record<string, unknown> } };
      const put = await fetch('/api/system/set_config', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...result.config, keymap: 'de' }),
      });
      return put.status;
    });
    expect(saved).toBe(200);
    await page.reload();
    await byTestId(page, 'video-webrtc').waitFor({ state: 'visible', timeout: 30_000 });
    await byTestId(page, 'toolbar-keyboard').click();
    const keyboard = byTestId(page, 'virtual-keyboard');
    await keyboard.waitFor({ state: 'visible' });
    // The keymap comes with the config, which may arrive after the keyboard is drawn.
    await expect.poll(() => keyboard.getAttribute('data-keymap'), { timeout: 10_000 }).toBe('de');
    // German layout: the key where US has Y types z
    await expect.poll(() => byTestId(page, 'vk-KeyY').innerText()).toMatch(/z/i);

    const tap = async (code: string) => {
      const box = (await byTestId(page, `vk-${code}`).boundingBox())!;
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.down();
      await page.mouse.up();
    };
    let mark = (await serial()).length;
    await tap('ShiftLeft');
    await tap('KeyA');
    let lines = await serialAfter(mark, (l) => l.some((x) => / 1 42 0$/.test(x)));
    const keys = lines
      .map((x) => / 1 (\d+) ([01])$/.exec(x))
      .filter((m) => m !== null)
      .map((m) => `${m[1]}:${m[2]}`);
    expect(keys).toEqual(['42:1', '30:1', '30:0', '42:0']);
    await byTestId(page, 'vk-close').click();

    mark = (await serial()).length;
    await byTestId(page, 'toolbar-shortcuts').click();
    await page.getByText('Alt+Tab', { exact: true }).click();
    lines = await serialAfter(mark, (l) => l.some((x) => / 1 56 0$/.test(x)));
    const shortcut = lines
      .map((x) => / 1 (\d+) ([01])$/.exec(x))
      .filter((m) => m !== null)
      .map((m) => `${m[1]}:${m[2]}`);
    expect(shortcut).toEqual(['56:1', '15:1', '15:0', '56:0']);
  }, 90_000);

  it('pastes in the chosen keymap: German z is the key US calls Y', async () => {
    const mark = (await serial()).length;
    await byTestId(page, 'toolbar-paste').click();
    await byTestId(page, 'paste-text').fill('zy');
    await byTestId(page, 'paste-send').click();
    await expect
      .poll(() => byTestId(page, 'paste-result').isVisible(), { timeout: 20_000 })
      .toBe(true);
    await byTestId(page, 'paste-close').click();
    const lines = await serialAfter(mark, (l) => l.some((x) => / 1 44 0$/.test(x)));
    const presses = lines.map((x) => / 1 (\d+) 1$/.exec(x)?.[1]).filter((c) => c !== undefined);
    expect(presses).toEqual(['21', '44']);
    // leave the typed "zy" off the next command line
    await byTestId(page, 'video-area').focus();
    await page.keyboard.press('Backspace');
    await page.keyboard.press('Backspace');
  }, 60_000);

  it('shows the guest keyboard LEDs in the status bar', async () => {
    await byTestId(page, 'video-area').focus();
    await page.keyboard.press('CapsLock');
    await expect
      .poll(() => byTestId(page, 'status-led-caps').getAttribute('data-on'), { timeout: 10_000 })
      .toBe('true');
    await page.keyboard.press('CapsLock');
    await expect
      .poll(() => byTestId(page, 'status-led-caps').getAttribute('data-on'), { timeout: 10_000 })
      .toBe('false');
  }, 30_000);

  it('a browser killed in the middle of a key press: the guest sees the key released', async () => {
    const mark = (await serial()).length;
    await byTestId(page, 'video-area').focus();
    await page.keyboard.down('KeyK');
    const press = new RegExp(` 1 ${KEY_K} 1$`);
    const release = new RegExp(` 1 ${KEY_K} 0$`);
    await serialAfter(mark, (l) => l.some((x) => press.test(x)));
    await browser.kill();
    const lines = await serialAfter(mark, (l) => l.some((x) => release.test(x)), 10_000);
    const releasedAt = lines.findIndex((x) => release.test(x));
    // and no auto-repeat of K after the release
    await new Promise((r) => setTimeout(r, 1000));
    const after = (await serial()).slice(mark + releasedAt + 1);
    expect(after.filter((x) => new RegExp(` 1 ${KEY_K} [12]$`).test(x))).toEqual([]);
  }, 60_000);
});
