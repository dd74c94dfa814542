/**
 * First run, login and logout in a real Chromium against the real server process:
 * SPEC 2 (navigation guard), 4 (init then automatic login, logout), 5 and 8 (messages).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Browser } from './fixtures/browser';
import {
  byTestId,
  expectText,
  loginViaUi,
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
  ({ server, browser, page } = await startConsole({ init: false }));
});
afterAll(() => stopConsole(browser, server));

describe('first run', () => {
  it('sends a new device to /init keeping the query, checks the form, then logs in by itself', async () => {
    await page.goto(`${server.url}/kvm?foo=bar`);
    await byTestId(page, 'init-password').waitFor();
    expect(new URL(page.url()).pathname).toBe('/init');
    expect(new URL(page.url()).searchParams.get('foo')).toBe('bar');

    await byTestId(page, 'init-password').fill('abc');
    await byTestId(page, 'init-confirm').fill('abc');
    await byTestId(page, 'init-submit').click();
    await expectText(page, 'Password is invalid');

    await byTestId(page, 'init-password').fill(PASSWORD);
    await byTestId(page, 'init-confirm').fill(`${PASSWORD}x`);
    await byTestId(page, 'init-submit').click();
    await expectText(page, 'Entered passwords differ');

    await byTestId(page, 'init-confirm').fill(PASSWORD);
    await byTestId(page, 'init-submit').click();
    await byTestId(page, 'main-page').waitFor({ state: 'visible' });
    expect(['/', '/kvm']).toContain(new URL(page.url()).pathname);
    const inited = await (await fetch(`${server.url}/api/init/is_inited`)).json();
    expect(inited.result.is_inited).toBe(true);
    // the token is kept where SPEC 3 says
    expect(await page.evaluate(() => localStorage.getItem('auth_token'))).toMatch(/^[0-9a-f]{64}$/);
  });

  it('no longer shows /init once initialised', async () => {
    await page.goto(`${server.url}/init`);
    await byTestId(page, 'main-page').waitFor({ state: 'visible' });
    expect(new URL(page.url()).pathname).toBe('/');
  });

  it('logs out after a confirmation and lands on the login page', async () => {
    await byTestId(page, 'logout-button').click();
    // The browser asks for reduced motion (fixtures/browser.ts): the dialog does not zoom in.
    await byTestId(page, 'confirm-ok').waitFor({ state: 'visible' });
    expect(await page.locator('.ant-modal').first().getAttribute('class')).not.toMatch(/zoom/);
    await byTestId(page, 'confirm-ok').click();
    await byTestId(page, 'login-password').waitFor({ state: 'visible' });
    expect(new URL(page.url()).pathname).toBe('/login');
    await expect
      .poll(() => page.evaluate(() => localStorage.getItem('auth_token')), { timeout: 10_000 })
      .toBeNull();
    // the old session is gone on the server too: the main page sends us back to login
    await page.goto(`${server.url}/`);
    await byTestId(page, 'login-password').waitFor({ state: 'visible' });
  });

  it('shows the no-permission page for an unknown path', async () => {
    await page.goto(`${server.url}/no/such/page`);
    await byTestId(page, 'no-permission').waitFor({ state: 'visible' });
  });
});

describe('login errors', () => {
  it('says the password is not correct on a 403', async () => {
    await page.goto(`${server.url}/login`);
    await submitLogin(page, 'wrong-password');
    await expectText(page, 'Password is not correct!');
    expect(new URL(page.url()).pathname).toBe('/login');
  });

  it('says so when the network is down', async () => {
    await page.goto(`${server.url}/login`);
    await byTestId(page, 'login-password').waitFor();
    await server.stop();
    try {
      await submitLogin(page, PASSWORD);
      await expectText(page, 'Network error! please check your network!');
    } finally {
      await server.launch();
    }
  });

  it('reports the lockout with the remaining time after too many failures', async () => {
    await page.goto(`${server.url}/login`);
    // the restart in the previous test cleared the counter: nine failures through the API,
    // the tenth from the page
    for (let i = 0; i < 9; i += 1) {
      await fetch(`${server.url}/api/auth/login`, {
        method: 'POST',
        body: new URLSearchParams({ user: 'admin', passwd: `nope${i}` }),
      });
    }
    await submitLogin(page, 'still-wrong');
    await expectText(page, 'Too many failed login attempts');
  });

  it('logs in with the right password (after restarting the server to clear the lockout)', async () => {
    await server.stop();
    await server.launch();
    await loginViaUi(page, server);
    await expectText(page, 'Login successful');
  });
});
