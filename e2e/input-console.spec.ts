/**
 * The console's input controls on the testbed target (fast, no VM): the add-shortcut flow with
 * the virtual keyboard forced to floating, sending a saved shortcut, the paste limit, and the
 * mouse mode switch that re-creates the device.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Browser } from './fixtures/browser';
import {
  byTestId,
  expectText,
  loginViaUi,
  openFromMenu,
  openSettings,
  pressConfirmOk,
  startConsole,
  stopConsole,
} from './fixtures/console';
import type { ServerProcess } from './fixtures/server';

let server: ServerProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ({ server, browser, page } = await startConsole());
  await loginViaUi(page, server);
  await byTestId(page, 'video-webrtc').waitFor({ state: 'visible', timeout: 30_000 });
}, 90_000);
afterAll(() => stopConsole(browser, server));

async function tap(p: Page, code: string): Promise<void> {
  const box = (await byTestId(p, `vk-${code}`).boundingBox())!;
  await p.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await p.mouse.down();
  await p.mouse.up();
}

async function config(p: Page): Promise<Record<string, unknown>> {
  return p.evaluate(async () => {
    const res = await fetch('/api/system/get_config');
    return ((await res.json()) as { result: { config: Record<string, unknown> } }).result.config;
  });
}

describe('console input controls', () => {
  it('adds a shortcut from the virtual keyboard (forced floating) and keeps it on the server', async () => {
    await openFromMenu(page, 'toolbar-shortcuts', 'shortcut-add', 'shortcut-add-dialog');
    const keyboard = byTestId(page, 'virtual-keyboard');
    await keyboard.waitFor({ state: 'visible' });
    expect(await keyboard.getAttribute('data-mode')).toBe('floating');
    await tap(page, 'ControlLeft');
    await tap(page, 'ShiftLeft');
    await tap(page, 'KeyE');
    expect(await byTestId(page, 'shortcut-keys').getAttribute('data-keys')).toBe(
      'ControlLeft,ShiftLeft,KeyE',
    );
    await byTestId(page, 'shortcut-save').click();
    await byTestId(page, 'shortcut-add-dialog').waitFor({ state: 'hidden' });
    // The dialog may close before the save reaches the server: wait for it there.
    await expect
      .poll(async () => (await config(page)).shortcuts, { timeout: 10_000 })
      .toEqual([expect.objectContaining({ keys: ['ControlLeft', 'ShiftLeft', 'KeyE'] })]);
  }, 60_000);

  it('refuses a duplicate shortcut', async () => {
    await openFromMenu(page, 'toolbar-shortcuts', 'shortcut-add', 'shortcut-add-dialog');
    await tap(page, 'ControlLeft');
    await tap(page, 'ShiftLeft');
    await tap(page, 'KeyE');
    await byTestId(page, 'shortcut-save').click();
    await byTestId(page, 'shortcut-error').waitFor({ state: 'visible' });
    await byTestId(page, 'shortcut-cancel').click();
    expect(((await config(page)).shortcuts as unknown[]).length).toBe(1);
  }, 60_000);

  it("refuses a paste over the limit with SPEC's message", async () => {
    await byTestId(page, 'toolbar-paste').click();
    await byTestId(page, 'paste-text').fill('x'.repeat(8193));
    await byTestId(page, 'paste-send').click();
    await expectText(page, 'Too many text for paste!');
    await byTestId(page, 'paste-close').click();
  }, 60_000);

  it('switches the mouse to relative after a confirmation; the status bar follows', async () => {
    await openSettings(page);
    await byTestId(page, 'settings-mouse-mode-relative').click();
    await pressConfirmOk(page, byTestId(page, 'settings-mouse-mode-confirm'));
    await expect
      .poll(() => byTestId(page, 'status-mouse').getAttribute('data-absolute'), { timeout: 10_000 })
      .toBe('false');
    const absolute = () =>
      page.evaluate(async () => {
        const res = await fetch('/api/hid');
        return ((await res.json()) as { result: { mouse: { absolute: boolean } } }).result.mouse
          .absolute;
      });
    await expect.poll(absolute, { timeout: 10_000 }).toBe(false);
    // The console saves the setting with its own call after the switch: wait for it to land.
    await expect
      .poll(async () => (await config(page)).is_absolute_mouse, { timeout: 10_000 })
      .toBe(false);
  }, 60_000);
});
