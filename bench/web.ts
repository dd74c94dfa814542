/**
 * `npm run bench -- web`: {"login_route_gzip_bytes", "main_route_gzip_bytes"}.
 * The JS and CSS a route loads before its first paint, gzip-compressed (level 9, as the build
 * ships them): a real Chromium loads the route from a real server with an empty cache, and
 * every script and stylesheet requested until the route's first element is visible is counted.
 * Budgets: login <= 250 KB, main <= 400 KB.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { Browser } from '../e2e/fixtures/browser';
import { REPO_ROOT, ServerProcess } from '../e2e/fixtures/server';
import { note } from './lib';

const DIST = join(REPO_ROOT, 'web', 'dist');

function gzipBytes(urlPath: string): number {
  const file = join(DIST, urlPath);
  if (existsSync(`${file}.gz`)) return readFileSync(`${file}.gz`).length;
  return gzipSync(readFileSync(file), { level: 9 }).length;
}

async function measure(page: Page, url: string, readySelector: string): Promise<number> {
  const assets = new Set<string>();
  page.on('request', (req) => {
    const type = req.resourceType();
    if (type === 'script' || type === 'stylesheet') assets.add(new URL(req.url()).pathname);
  });
  await page.goto(url);
  await page.locator(readySelector).first().waitFor({ state: 'visible', timeout: 30_000 });
  page.removeAllListeners('request');
  let total = 0;
  for (const path of assets) {
    const bytes = gzipBytes(path);
    note(`  ${path} ${bytes}`);
    total += bytes;
  }
  return total;
}

const server = await ServerProcess.start();
try {
  await fetch(`${server.url}/api/init/init?password=benchpass`);

  let browser = await Browser.launch();
  note('login route:');
  const login = await measure(
    await browser.page(),
    `${server.url}/login`,
    '[data-testid="login-password"]',
  );
  await browser.close();

  browser = await Browser.launch();
  const page = await browser.page();
  // Log in through the API from the page's origin, so the session cookie is set, then load
  // the main route with an empty cache.
  await page.goto(`${server.url}/api/init/is_inited`);
  const token = await page.evaluate(async () => {
    const res = await fetch('/api/auth/login', {
      method: 'POST',
      body: new URLSearchParams({ user: 'admin', passwd: 'benchpass' }),
    });
    const body = (await res.json()) as { result: { token: string } };
    localStorage.setItem('auth_token', body.result.token);
    return body.result.token;
  });
  if (!/^[0-9a-f]{64}$/.test(token)) throw new Error('login failed');
  note('main route:');
  const main = await measure(page, `${server.url}/`, '[data-testid="main-page"]');
  await browser.close();

  process.stdout.write(
    `${JSON.stringify({ login_route_gzip_bytes: login, main_route_gzip_bytes: main })}\n`,
  );
} finally {
  await server.dispose();
}
