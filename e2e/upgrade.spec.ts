/**
 * The whole upgrade in Chromium (issue 12 items 4-6 and 10), on the launcher as `npm start` runs
 * it: a loopback channel offers version X+1 packaged from this tree; the console shows the tip,
 * downloads, confirms, follows /upgrading, and the device answers with X+1 from its new slot.
 * Then a package whose server exits at start is uploaded: the launcher puts X+1 back and the
 * page says the upgrade failed, with the device's reason. Last, X is uploaded over X+1: the
 * console asks to confirm the downgrade, and only then installs it.
 */
import { execFileSync } from 'node:child_process';
import { createReadStream, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { Browser } from './fixtures/browser';
import { byTestId, consoleShows, initDevice, loginViaUi, pressConfirmOk } from './fixtures/console';
import { REPO_ROOT, ServerProcess } from './fixtures/server';

const PACKAGE = join(REPO_ROOT, 'scripts', 'package.mjs');

/** package.json's version with the patch number raised by `n` (0.1.0 → V0.1.1). */
function bumped(n: number): string {
  const v = (
    JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
  const [major, minor, patch] = v.split(/[.-]/).map(Number);
  return `V${major}.${minor}.${patch! + n}`;
}

let work = '';
let channel: Server;
let server: ServerProcess;
let browser: Browser;
let page: Page;
const next = bumped(1);
const broken = bumped(2);
let brokenPkg = '';
/** X itself again: older than X+1, so installing it is a downgrade the admin confirms. */
const older = bumped(0);
let olderPkg = '';

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'kvm-e2e-upgrade-'));
  const pkg = (args: string[]) =>
    execFileSync(process.execPath, [PACKAGE, ...args], { cwd: work, encoding: 'utf8' });
  pkg(['--gen-key', join(work, 'release')]);
  // X+1: this tree's own build (server bundle and console), into a GL-layout channel
  pkg([
    ...['--version', next, '--key', join(work, 'release.key'), '--from', REPO_ROOT],
    ...['--out', join(work, 'out'), '--channel', join(work, 'release'), '--release-note', 'e2e'],
  ]);
  // X+2: a release whose server exits at once
  const tree = join(work, 'broken');
  await mkdir(join(tree, 'server', 'dist'), { recursive: true });
  await mkdir(join(tree, 'web', 'dist'), { recursive: true });
  await writeFile(join(tree, 'package.json'), '{"name":"kvm-console","type":"module"}');
  await writeFile(join(tree, 'server', 'dist', 'main.js'), 'process.exit(1);\n');
  await writeFile(join(tree, 'web', 'dist', 'index.html'), '<!doctype html>');
  brokenPkg = pkg([
    ...['--version', broken, '--key', join(work, 'release.key'), '--from', tree],
    ...['--out', join(work, 'out')],
  ]).split(' ')[0]!;
  olderPkg = pkg([
    ...['--version', older, '--key', join(work, 'release.key'), '--from', REPO_ROOT],
    ...['--out', join(work, 'older')],
  ]).split(' ')[0]!;

  channel = createServer((req, res) => {
    const name = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    if (!/^\/release\/[\w.+-]+$/.test(name)) return res.writeHead(404).end();
    const path = join(work, name);
    stat(path).then(
      (s) => {
        res.writeHead(200, { 'content-length': s.size });
        createReadStream(path).pipe(res);
      },
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((r) => channel.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(channel.address() as AddressInfo).port}/release`;
  server = await ServerProcess.start({
    installDir: join(work, 'install'),
    config: `upgrade:\n  channel_url: ${base}\n  trusted_keys: [${join(work, 'release.pub')}]\n`,
  });
  await initDevice(server);
  browser = await Browser.launch();
  page = await browser.page();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  channel?.closeAllConnections();
  await new Promise((r) => channel?.close(r));
  if (work) await rm(work, { recursive: true, force: true });
});

/** What the console shows, and the server's last log lines, for a failure message. */
async function consoleState(p: Page): Promise<string> {
  return `${await consoleShows(p)}\nserver log tail:\n${server.log.slice(-3000)}`;
}

/** Waits for /upgrading after the confirm; a failure says what the console showed. */
async function toUpgrading(p: Page): Promise<void> {
  try {
    await p.waitForURL(/\/upgrading$/, { timeout: 15_000 });
  } catch (err) {
    throw new Error(`not on /upgrading: ${(err as Error).message}\n${await consoleState(p)}`);
  }
}

/** The device's version as the page's session sees it. */
async function deviceVersion(p: Page): Promise<string> {
  return p.evaluate(async () => {
    const res = await fetch('/api/upgrade/version');
    return ((await res.json()) as { result: { version: string } }).result.version;
  });
}

describe('upgrade through the console', () => {
  it('shows the tip, downloads, upgrades through /upgrading, and X+1 answers', async () => {
    await loginViaUi(page, server);
    const tip = byTestId(page, 'upgrade-tip');
    await tip.waitFor({ state: 'visible', timeout: 15_000 });
    expect(await tip.textContent()).toContain(next);
    await byTestId(page, 'upgrade-tip-download').click();
    // the download finishes in the background; then the confirm dialog shows by itself
    await byTestId(page, 'upgrade-confirm').waitFor({ state: 'visible', timeout: 30_000 });
    expect(await byTestId(page, 'upgrade-save-config').isChecked()).toBe(true);
    await pressConfirmOk(page, byTestId(page, 'upgrade-confirm'), consoleState);
    await toUpgrading(page);
    await page
      .locator('[data-testid="upgrading-page"][data-phase="done"]')
      .waitFor({ state: 'attached', timeout: 60_000 });
    // the page goes back to the root, still logged in (the data folder was kept)
    await page.waitForURL((url) => url.pathname === '/', { timeout: 15_000 });
    await byTestId(page, 'main-page').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await deviceVersion(page)).toBe(next);
    expect(server.log).toContain(`upgrade to ${next} is healthy and kept`);
  }, 180_000);

  it('after it, About fits the window, names the version and the device, and its upgrade control is idle', async () => {
    // Issue 21: download_info kept the old package's size, the console polled it every second
    // for as long as the page was open, and About showed an empty bar with Upload disabled.
    const polls: string[] = [];
    const onRequest = (r: { url(): string }) => {
      if (r.url().includes('/api/upgrade/download_info')) polls.push(r.url());
    };
    page.on('request', onRequest);
    try {
      await byTestId(page, 'help-button').click();
      await byTestId(page, 'upgrade-control').waitFor({ state: 'visible', timeout: 10_000 });
      // The running version in the upgrade control's spelling; a device id, not the host name.
      expect(await byTestId(page, 'about-version').textContent()).toBe(next);
      expect(await byTestId(page, 'about-device-id').textContent()).toMatch(
        /^[0-9A-F]{4}(-[0-9A-F]{4}){3}$/,
      );
      expect(await byTestId(page, 'upgrade-download-progress').count()).toBe(0);
      expect(await byTestId(page, 'upgrade-upload').isEnabled()).toBe(true);
      // The whole dialog inside the 1366 x 800 window (its body scrolls).
      const box = await page.evaluate(() => {
        const modal = document
          .querySelector('[data-testid="upgrade-control"]')
          ?.closest('.ant-modal');
        const r = modal?.getBoundingClientRect();
        return r ? { top: r.top, bottom: r.bottom, window: window.innerHeight } : null;
      });
      expect(box).not.toBeNull();
      expect(box!.window).toBe(800);
      expect(box!.top).toBeGreaterThanOrEqual(0);
      expect(box!.bottom).toBeLessThanOrEqual(800);
      // Nothing is downloading: nothing is polled. Absence needs a window to look in: 3.5 s
      // would hold three polls of the old console (one a second).
      await page.waitForTimeout(3_500);
      expect(polls).toEqual([]);
    } finally {
      page.off('request', onRequest);
    }
    const info = await page.evaluate(async () => {
      const res = await fetch('/api/upgrade/download_info');
      return ((await res.json()) as { result: unknown }).result;
    });
    expect(info).toEqual({ size: 0, total_size: 0 });
    await page.keyboard.press('Escape');
    await byTestId(page, 'upgrade-control').waitFor({ state: 'detached', timeout: 10_000 });
  }, 60_000);

  it('rolls back a version whose server exits at start, and /upgrading says why', async () => {
    await byTestId(page, 'help-button').click();
    await byTestId(page, 'upgrade-control').waitFor({ state: 'visible', timeout: 10_000 });
    await byTestId(page, 'upgrade-file').setInputFiles(brokenPkg);
    await byTestId(page, 'upgrade-confirm').waitFor({ state: 'visible', timeout: 30_000 });
    await pressConfirmOk(page, byTestId(page, 'upgrade-confirm'), consoleState);
    await toUpgrading(page);
    const failed = byTestId(page, 'upgrading-failed');
    await failed.waitFor({ state: 'visible', timeout: 90_000 });
    expect(await failed.textContent()).toContain(
      `${broken} exited with code 1 before it was ready`,
    );
    await byTestId(page, 'upgrading-ok').click();
    await page.waitForURL((url) => url.pathname === '/', { timeout: 15_000 });
    await byTestId(page, 'main-page').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await deviceVersion(page)).toBe(next);
  }, 180_000);

  it('an older release asks to confirm the downgrade, and installs only once confirmed', async () => {
    await byTestId(page, 'help-button').click();
    await byTestId(page, 'upgrade-control').waitFor({ state: 'visible', timeout: 10_000 });
    await byTestId(page, 'upgrade-file').setInputFiles(olderPkg);
    await byTestId(page, 'upgrade-confirm').waitFor({ state: 'visible', timeout: 30_000 });
    await pressConfirmOk(page, byTestId(page, 'upgrade-confirm'), consoleState);
    // 409 UpgradeDowngradeError: a question naming both versions, not an install.
    const ask = byTestId(page, 'upgrade-downgrade');
    await ask.waitFor({ state: 'visible', timeout: 30_000 }).catch(async (err: unknown) => {
      throw new Error(
        `no downgrade question: ${(err as Error).message}\n${await consoleState(page)}`,
      );
    });
    expect(await ask.textContent()).toContain(
      `The package is ${older}, older than the running firmware ${next}.`,
    );
    expect(page.url()).not.toMatch(/\/upgrading$/);
    expect(await deviceVersion(page)).toBe(next);
    await pressConfirmOk(page, ask, consoleState);
    await toUpgrading(page);
    await page
      .locator('[data-testid="upgrading-page"][data-phase="done"]')
      .waitFor({ state: 'attached', timeout: 60_000 });
    await page.waitForURL((url) => url.pathname === '/', { timeout: 15_000 });
    await byTestId(page, 'main-page').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await deviceVersion(page)).toBe(older);
  }, 180_000);
});
