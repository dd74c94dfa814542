/**
 * SPEC/issue 3: when WebRTC cannot connect within a few seconds, the console falls back to
 * direct H.264 by itself and says so. The gateway socket is made unreachable from the
 * browser (Playwright closes every /janus/ws connection), on the testbed target.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser } from './fixtures/browser';
import { byTestId, expectText, initDevice, loginViaUi } from './fixtures/console';
import { ServerProcess } from './fixtures/server';

let server: ServerProcess;
let browser: Browser;

beforeAll(async () => {
  server = await ServerProcess.start({ target: 'testbed' });
  await initDevice(server);
  browser = await Browser.launch();
});
afterAll(async () => {
  await browser?.close();
  await server?.dispose();
});

describe('video fallback', () => {
  it('shows direct H.264 and a notice when the WebRTC gateway cannot be reached', async () => {
    const page = await browser.page();
    let attempts = 0;
    await page.routeWebSocket(/\/janus\/ws/, (ws) => {
      attempts += 1;
      void ws.close({ code: 1011, reason: 'blocked by the test' });
    });
    await loginViaUi(page, server);
    await byTestId(page, 'video-direct').waitFor({ state: 'attached', timeout: 20_000 });
    await expectText(page, 'WebRTC could not be reached');
    expect(attempts).toBeGreaterThan(0);
    const before = Number(
      (await page.locator('[data-frames]').first().getAttribute('data-frames')) ?? 0,
    );
    await expect
      .poll(
        async () =>
          Number((await page.locator('[data-frames]').first().getAttribute('data-frames')) ?? 0),
        { timeout: 10_000 },
      )
      .toBeGreaterThan(before + 5);
    // the stored setting is not changed by the fallback
    const cfg = await page.evaluate(async () =>
      (
        await fetch('/api/system/get_config', {
          headers: { token: localStorage.getItem('auth_token') ?? '' },
        })
      ).json(),
    );
    expect((cfg as { result: { config: { video_mode: string } } }).result.config.video_mode).toBe(
      'webrtc',
    );
  });
});
