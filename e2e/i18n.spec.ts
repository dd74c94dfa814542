/** zh/en switch from the language settings: the console's text changes, and the choice sticks. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Browser } from './fixtures/browser';
import { byTestId, loginViaUi, openSettings, startConsole, stopConsole } from './fixtures/console';
import type { ServerProcess } from './fixtures/server';

let server: ServerProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ({ server, browser, page } = await startConsole());
});
afterAll(() => stopConsole(browser, server));

const CJK = /[\u4e00-\u9fff]/;

describe('language', () => {
  it('is English by default, switches to Chinese and back, and is kept on the server', async () => {
    await loginViaUi(page, server);
    await openSettings(page);
    const sidebar = byTestId(page, 'settings-sidebar');
    expect(await sidebar.innerText()).not.toMatch(CJK);

    // A click while the settings panel still opens can be lost (seen once in a full run):
    // the radio is clicked again until the texts change, which picking zh twice does not harm.
    await expect
      .poll(
        async () => {
          const text = await sidebar.innerText();
          if (!CJK.test(text)) await byTestId(page, 'language-zh').click();
          return text;
        },
        { timeout: 20_000, interval: 1_000 },
      )
      .toMatch(CJK);
    await expect
      .poll(
        async () =>
          (
            await (
              await fetch(`${server.url}/api/system/get_config`, {
                headers: {
                  token: (await page.evaluate(() => localStorage.getItem('auth_token'))) ?? '',
                },
              })
            ).json()
          ).result.config.language,
      )
      .toBe('zh');

    await page.reload();
    await byTestId(page, 'main-page').waitFor({ state: 'visible' });
    expect(await byTestId(page, 'toolbar').innerHTML()).toMatch(CJK);

    await openSettings(page);
    await byTestId(page, 'language-en').click();
    await expect
      .poll(async () => byTestId(page, 'settings-sidebar').innerText(), { timeout: 20_000 })
      .not.toMatch(CJK);
  });
});
