/**
 * "Export log files" in the help dialog, in Chromium (testbed target): the zip the browser
 * downloads holds the logs, versions, configuration and driver states, and none of the secrets
 * the server saw or the browser holds. The server logs at debug level, so the refused requests
 * that carry an `auth_token` and the admin password in their query strings are in its log file
 * (checked first: otherwise the test would prove nothing). The zip is read with Debian's
 * `unzip`, a reader independent of the server's own writer. Embedded (SPEC 1), the same button
 * asks the host to download (`download_file`) and downloads nothing itself.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Browser } from './fixtures/browser';
import { byTestId, loginViaUi, PASSWORD, startConsole, stopConsole } from './fixtures/console';
import type { ServerProcess } from './fixtures/server';

const run = promisify(execFile);

/** Looks like a token a client might put into a URL; not a session of this server. */
const URL_TOKEN = 'e2eUrlToken7Qx9Zk2Lm4Np6Rs8';

let server: ServerProcess;
let browser: Browser;
let page: Page;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-e2e-logs-'));
  ({ server, browser, page } = await startConsole({ config: 'log:\n  level: debug\n' }));
  await loginViaUi(page, server);
}, 60_000);
afterAll(async () => {
  await stopConsole(browser, server);
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function openHelp(p: Page): Promise<void> {
  await byTestId(p, 'help-button').click();
  await byTestId(p, 'export-logs').waitFor({ state: 'visible', timeout: 10_000 });
}

/** Every member of the zip at `file`, name → text (after `unzip -t` checked every CRC). */
async function unzipAll(file: string): Promise<Map<string, string>> {
  await run('unzip', ['-tq', file], { timeout: 10_000 });
  const { stdout } = await run('unzip', ['-Z1', file], { timeout: 10_000 });
  const out = new Map<string, string>();
  for (const name of stdout.split('\n').filter(Boolean)) {
    const member = await run('unzip', ['-p', file, name], {
      timeout: 10_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    out.set(name, member.stdout);
  }
  return out;
}

describe('log export', () => {
  it('downloads a zip of logs, versions, config and states without a secret inside', async () => {
    // Secrets the server sees: an auth_token and the admin password in query strings (both
    // refused: the log records the URL), and a front-end log that quotes them with their keys.
    const token = (await browser.context.cookies()).find((c) => c.name === 'auth_token')?.value;
    expect(token).toMatch(/^[0-9a-f]{32,}$/);
    const stored = await page.evaluate(() => localStorage.getItem('auth_token'));
    const secrets = [PASSWORD, URL_TOKEN, token!, ...(stored ? [stored] : [])];
    const statuses = await page.evaluate(
      async ({ urlToken, password, session }) => {
        const a = await fetch(`/api/upgrade/nonexistent?auth_token=${urlToken}`);
        const b = await fetch(
          `/api/auth/login?user=admin&passwd=${encodeURIComponent(password)}&auth_token=${urlToken}`,
        );
        const c = await fetch('/api/upgrade/log', {
          method: 'POST',
          body: `frontend: retrying with auth_token=${session} password: ${password}\n`,
        });
        return [a.status, b.status, c.status];
      },
      { urlToken: URL_TOKEN, password: PASSWORD, session: token! },
    );
    expect(statuses[0]).toBeGreaterThanOrEqual(400);
    expect(statuses[1]).toBeGreaterThanOrEqual(400);
    expect(statuses[2]).toBe(200);
    // the raw log has them (pino writes asynchronously: poll)
    await expect
      .poll(
        async () => {
          const raw = await readFile(join(server.dataDir, 'logs', 'server.log'), 'utf8');
          return raw.includes(URL_TOKEN) && raw.includes(PASSWORD);
        },
        { timeout: 10_000 },
      )
      .toBe(true);

    await openHelp(page);
    const downloading = page.waitForEvent('download', { timeout: 20_000 });
    await byTestId(page, 'export-logs').click();
    const download = await downloading;
    expect(download.suggestedFilename()).toMatch(/^system_logs_\d{8}_\d{6}\.zip$/);
    const file = join(dir, download.suggestedFilename());
    await download.saveAs(file);

    const members = await unzipAll(file);
    const names = [...members.keys()];
    for (const name of [
      'logs/server.log',
      'logs/frontend.log',
      'versions.json',
      'config.json',
      'state.json',
      'network.json',
      'system.json',
    ])
      expect(names, name).toContain(name);
    // each JSON member parses; versions name this firmware and the target
    for (const name of names.filter((n) => n.endsWith('.json')))
      expect(() => JSON.parse(members.get(name)!) as unknown, name).not.toThrow();
    const versions = JSON.parse(members.get('versions.json')!) as Record<string, unknown>;
    expect(versions['target']).toBe('testbed');
    expect(typeof versions['firmware']).toBe('string');
    // the log made it, masked: the refused requests are there, their secrets are not
    const log = members.get('logs/server.log')!;
    expect(log).toContain('/api/upgrade/nonexistent?auth_token=xxxx');
    expect(log).toContain('passwd=xxxx');
    expect(members.get('logs/frontend.log')).toContain('auth_token=xxxx');

    for (const [name, text] of members)
      for (const secret of secrets)
        expect(text.includes(secret), `${name} holds a secret`).toBe(false);
    await page.keyboard.press('Escape');
  }, 60_000);

  it('asks the host to download when embedded (download_file), downloading nothing', async () => {
    // a react-native-webview host: the console posts its messages to this object
    const embedded = await browser.context.newPage();
    try {
      await embedded.addInitScript(() => {
        const w = window as unknown as { posted: string[]; ReactNativeWebView: unknown };
        w.posted = [];
        w.ReactNativeWebView = { postMessage: (data: string) => w.posted.push(data) };
      });
      let downloads = 0;
      embedded.on('download', () => (downloads += 1));
      await embedded.goto(server.url);
      await byTestId(embedded, 'main-page').waitFor({ state: 'visible', timeout: 20_000 });
      await openHelp(embedded);
      await byTestId(embedded, 'export-logs').click();
      const posted = (): Promise<Array<{ type: string; url?: string }>> =>
        embedded.evaluate(() =>
          (window as unknown as { posted: string[] }).posted.map(
            (d) => JSON.parse(d) as { type: string; url?: string },
          ),
        );
      await expect
        .poll(async () => (await posted()).filter((m) => m.type === 'download_file'), {
          timeout: 10_000,
        })
        .toEqual([{ type: 'download_file', url: `${server.url}/api/upgrade/log` }]);
      expect(downloads).toBe(0);
    } finally {
      await embedded.close();
    }
  }, 60_000);
});
