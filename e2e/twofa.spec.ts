/** Two-factor authentication end to end: enable in the security settings, then log in with a code. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { totp } from '../server/src/services/auth/totp';
import type { Browser } from './fixtures/browser';
import {
  byTestId,
  expectText,
  loginViaUi,
  openSettings,
  PASSWORD,
  startConsole,
  stopConsole,
  submitLogin,
} from './fixtures/console';
import type { ServerProcess } from './fixtures/server';

let server: ServerProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ({ server, browser, page } = await startConsole());
});
afterAll(() => stopConsole(browser, server));

const STEP_MS = 30_000;
/** The newest step whose code this test has sent: the server accepts each step once. */
let lastStep = -Infinity;

/**
 * A code the server has not seen yet and that stays valid for a while. The server takes the
 * steps next to its own (clock skew), so the next step's code is good at once; only when that one
 * is used too does this wait for the clock.
 */
async function freshCode(secret: string): Promise<string> {
  for (;;) {
    const now = Date.now();
    const step = Math.floor(now / STEP_MS);
    const intoStepS = (now % STEP_MS) / 1000;
    // the current step only while it has more than 5 s left; the next one always
    const usable = [step, step + 1].find((s) => s > lastStep && (s > step || intoStepS <= 25));
    if (usable !== undefined) {
      lastStep = usable;
      return totp(secret, usable * STEP_MS);
    }
    await new Promise((r) => setTimeout(r, (30 - intoStepS + 0.5) * 1000));
  }
}

/** A 6-digit code that no step the server accepts now would produce. */
function wrongCode(secret: string): string {
  const step = Math.floor(Date.now() / STEP_MS);
  const valid = new Set([-1, 0, 1, 2].map((d) => totp(secret, (step + d) * STEP_MS)));
  return ['000000', '111111', '222222'].find((c) => !valid.has(c))!;
}

describe('two-factor', () => {
  let secret = '';

  it('is enabled from the security settings with the QR secret and a 6-digit code', async () => {
    await loginViaUi(page, server);
    await openSettings(page);
    await byTestId(page, 'settings-group-security').click();
    await byTestId(page, 'twofa-enable').click();
    await byTestId(page, 'twofa-qr').waitFor({ state: 'visible' });
    secret = ((await byTestId(page, 'twofa-secret').textContent()) ?? '').replace(/\s/g, '');
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);

    await byTestId(page, 'twofa-enable-code').fill('12345');
    await byTestId(page, 'twofa-enable-submit').click();
    await expectText(page, 'Please enter 6-digit code');

    await byTestId(page, 'twofa-enable-code').fill(await freshCode(secret));
    await byTestId(page, 'twofa-enable-submit').click();
    await expect
      .poll(async () => byTestId(page, 'twofa-status').textContent(), { timeout: 10_000 })
      .toMatch(/enabled/i);
    const status = await (await fetch(`${server.url}/api/2fa/is_enabled`)).json();
    expect(status.result.enabled).toBe(true);
  });

  it('then asks for the code after the password, refuses a wrong one, accepts the right one', async () => {
    await byTestId(page, 'logout-button').click();
    await byTestId(page, 'confirm-ok').click();
    await byTestId(page, 'login-password').waitFor({ state: 'visible' });

    await submitLogin(page, PASSWORD);
    await byTestId(page, 'twofa-code').waitFor({ state: 'visible' });
    expect(new URL(page.url()).pathname).toBe('/twofactor');

    await byTestId(page, 'twofa-code').fill(wrongCode(secret));
    await byTestId(page, 'twofa-submit').click();
    await expectText(page, 'Password or 2FA code is not correct!');

    await byTestId(page, 'twofa-code').fill(await freshCode(secret));
    await byTestId(page, 'twofa-submit').click();
    await byTestId(page, 'main-page').waitFor({ state: 'visible' });
  });

  it('remembers this device when asked, so the password alone is enough next time', async () => {
    await byTestId(page, 'logout-button').click();
    await byTestId(page, 'confirm-ok').click();
    await submitLogin(page, PASSWORD);
    await byTestId(page, 'twofa-code').fill(await freshCode(secret));
    await byTestId(page, 'twofa-remember').check();
    await byTestId(page, 'twofa-submit').click();
    await byTestId(page, 'main-page').waitFor({ state: 'visible' });

    await byTestId(page, 'logout-button').click();
    await byTestId(page, 'confirm-ok').click();
    await submitLogin(page, PASSWORD);
    await byTestId(page, 'main-page').waitFor({ state: 'visible' });
  });
});
