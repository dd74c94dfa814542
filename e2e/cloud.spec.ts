/**
 * The cloud end to end (issue 25, docs/cloud.md): real PostgreSQL 15, NATS, coturn (loopback
 * peers allowed) and an SMTP sink, two fleet replicas A and B as real processes sharing them
 * and one TLS certificate (e2e/fixtures/cloud.ts), one device server on the QEMU target and a
 * second on the testbed target, Debian's Chromium.
 *
 * One account signs up on B with the e-mail code the sink caught; the QEMU device is enabled,
 * pins the fleet's self-signed certificate and is bound by the code it shows, entered on B's
 * "Add device"; its agent connects to A. Chromium, signed in on B, opens /d/<id>/ (B → NATS → A
 * → agent → the device's own server) and types into the QEMU guest (the guest's screen, read
 * over its serial port, is the oracle); with `?ice=relay` the stream info says Relay (media
 * through coturn). The testbed device opens in a second tab at the same time. Replica A is
 * killed: the device is back on B within seconds and no row of PostgreSQL is lost. Unbinding
 * on the fleet leaves the device `revoked`; unbinding on the device needs the admin password.
 */
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { CloudStatus } from '@kvm/protocol';
import { parseConfig } from '../fleet/src/config';
import { NATS_BIN } from '../scripts/cloud/engines.mjs';
import { Browser } from './fixtures/browser';
import { Cloud } from './fixtures/cloud';
import { byTestId, initDevice, PASSWORD } from './fixtures/console';
import { stopQemuConsole } from './fixtures/qemu';
import { freePort, REPO_ROOT, ServerProcess } from './fixtures/server';

const run = promisify(execFile);

const USER = 'e2e.owner';
const EMAIL = 'owner@e2e.test';
const FLEET_PW = 'cloud-pw1';

let cloud: Cloud;
let qemu: ServerProcess;
let testbed: ServerProcess;
let browser: Browser;
let fleetPage: Page;
/** The device console through the fleet (B). */
let consolePage: Page;
let qemuId = '';

/** A device API call with the admin's session token. */
async function device(
  server: ServerProcess,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: { ok: boolean; result: Record<string, unknown> } }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      token: await tokenOf(server),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: res.status,
    json: (await res.json()) as { ok: boolean; result: Record<string, unknown> },
  };
}

const tokens = new Map<ServerProcess, string>();
async function tokenOf(server: ServerProcess): Promise<string> {
  const known = tokens.get(server);
  if (known) return known;
  const res = await fetch(`${server.url}/api/auth/login`, {
    method: 'POST',
    body: new URLSearchParams({ user: 'admin', passwd: PASSWORD }),
  });
  expect(res.status).toBe(200);
  const token = ((await res.json()) as { result: { token: string } }).result.token;
  tokens.set(server, token);
  return token;
}

async function cloudState(server: ServerProcess): Promise<CloudStatus> {
  const r = await device(server, 'GET', '/api/cloud/status');
  expect(r.status).toBe(200);
  return r.json.result as unknown as CloudStatus;
}

/**
 * Enables cloud on `server`, points it at replica A, pins A's certificate (self-signed: not
 * trusted by the system's CAs) and has it show a bind code; enters the code on the fleet's
 * "Add device" (B's page); waits for the device to be bound and online. Returns its id.
 */
async function bindByCode(server: ServerProcess): Promise<string> {
  expect((await device(server, 'POST', '/api/cloud/enable', { enable: true })).status).toBe(200);
  const probe = await device(server, 'POST', '/api/cloud/server', { url: cloud.a.url });
  expect(probe.status).toBe(200);
  expect(probe.json.result['trusted']).toBe(false);
  const fingerprint = probe.json.result['fingerprint'] as string;
  expect(fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/i);
  expect((await device(server, 'POST', '/api/cloud/trust', { fingerprint })).status).toBe(200);
  const code = await device(server, 'POST', '/api/cloud/bind/code');
  expect(code.status).toBe(200);
  const digits = code.json.result['code'] as string;
  expect(digits).toMatch(/^\d{8}$/);

  // the fleet's "Add device" on B
  await fleetPage.goto(`${cloud.b.url}/#devices`);
  await byTestId(fleetPage, 'view-devices').waitFor({ state: 'visible' });
  await byTestId(fleetPage, 'claim-code').fill(digits);
  await byTestId(fleetPage, 'claim-submit').click();

  await expect
    .poll(async () => (await cloudState(server)).state, { timeout: 40_000 })
    .toBe('online');
  const state = await cloudState(server);
  expect(state.bound).toBe(true);
  expect(state.account?.username).toBe(USER);
  expect(state.pinned?.toUpperCase()).toBe(fingerprint.toUpperCase());
  // the same code again (replayed): refused, nothing more bound
  const devices = await cloud.query('SELECT id FROM devices');
  await byTestId(fleetPage, 'status').evaluate((el) => (el.textContent = ''));
  await byTestId(fleetPage, 'claim-code').fill(digits);
  await byTestId(fleetPage, 'claim-submit').click();
  await expect
    .poll(() => byTestId(fleetPage, 'status').textContent(), { timeout: 10_000 })
    .toMatch(/\S/);
  expect(await byTestId(fleetPage, 'status').textContent()).not.toMatch(/is being added/);
  expect(await cloud.query('SELECT id FROM devices')).toEqual(devices);
  return state.device.id!;
}

/** The fleet page's row of a device. */
function deviceRow(id: string) {
  return fleetPage.locator(`[data-testid="device-row"][data-device-id="${id}"]`);
}

/** The guest's serial log, lines without carriage returns. */
async function serial(): Promise<string[]> {
  const text = await readFile(join(qemu.dataDir, 'run', 'serial.log'), 'utf8').catch(() => '');
  return text.replace(/\r/g, '').split('\n');
}

/** The serial lines after line `mark` once one of them matches `re` (`timeout` ms at most). */
async function serialAfterMark(mark: number, re: RegExp, timeout = 20_000): Promise<string[]> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const lines = (await serial()).slice(mark);
    if (lines.some((l) => re.test(l))) return lines;
    if (Date.now() > deadline) throw new Error(`serial: no ${re}:\n${lines.slice(-15).join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The longest press-to-release time of a key in these input-logger lines, ms. */
function longestHold(lines: string[]): number {
  const down = new Map<string, number>();
  let longest = 0;
  for (const l of lines) {
    const m = / (\d+\.\d+) 1 (\d+) ([01])$/.exec(l);
    if (!m) continue;
    if (m[3] === '1') down.set(m[2]!, Number(m[1]));
    else if (down.has(m[2]!)) longest = Math.max(longest, (Number(m[1]) - down.get(m[2]!)!) * 1000);
  }
  return Math.round(longest);
}

/** Lower-case words, spaces and Enter as key presses into the focused console. */
async function pressLine(page: Page, line: string): Promise<void> {
  for (const ch of line) {
    if (ch === ' ') await page.keyboard.press('Space');
    else await page.keyboard.press(`Key${ch.toUpperCase()}`);
  }
  await page.keyboard.press('Enter');
}

/**
 * The guest's screen rows after `screen` (its own dump on the serial port), or null when no dump
 * came within 10 s (the command itself garbled).
 */
async function guestRows(page: Page): Promise<string[] | null> {
  const mark = (await serial()).length;
  await pressLine(page, 'screen');
  const lines = await serialAfterMark(mark, /^screen end$/, 10_000).catch(() => null);
  if (!lines) return null;
  return lines.slice(
    lines.findIndex((l) => l.startsWith('screen begin')) + 1,
    lines.indexOf('screen end'),
  );
}

/** Opens a device's console through replica B and waits for its first WebRTC frames. */
async function openThroughFleet(page: Page, deviceId: string, query = ''): Promise<void> {
  await page.goto(`${cloud.b.url}/d/${deviceId}/${query}`);
  await byTestId(page, 'main-page').waitFor({ state: 'visible', timeout: 60_000 });
  await page.waitForFunction(
    () =>
      Number(document.querySelector('[data-testid="video-webrtc"]')?.getAttribute('data-frames')) >
      0,
    null,
    { timeout: 60_000 },
  );
}

/** The device id the console in `page` reaches through the fleet at /d/<id>/ (its own status). */
async function deviceIdThrough(page: Page, id: string): Promise<string | number> {
  return page.evaluate(async (path) => {
    const res = await fetch(path);
    if (res.status !== 200) return res.status;
    return ((await res.json()) as { result: { device: { id: string } } }).result.device.id;
  }, `/d/${id}/api/cloud/status`);
}

async function streamConnection(page: Page): Promise<string> {
  return (await byTestId(page, 'status-stream-info').textContent()) ?? '';
}

describe('the cloud: two fleet replicas, a device bound to them, its console through the fleet', () => {
  beforeAll(async () => {
    cloud = await Cloud.start({ replicas: 2 });
    qemu = await ServerProcess.start({ target: 'qemu' });
    await initDevice(qemu);
    testbed = await ServerProcess.start({ target: 'testbed' });
    await initDevice(testbed);
    // the fleet's certificate is self-signed: Chromium accepts it as a user who clicked through
    browser = await Browser.launch({ ignoreHttpsErrors: true });
    fleetPage = await browser.page();
  }, 180_000);

  afterAll(async () => {
    const failed = cloud?.logs() ?? '';
    try {
      await stopQemuConsole(browser, qemu);
      await testbed?.dispose();
    } finally {
      await cloud?.dispose();
    }
    if (process.env['KVM_E2E_CLOUD_ECHO']) console.log(failed);
  }, 120_000);

  it('signs up with the e-mail code from the SMTP sink (SPEC 5 rules), then signs in on B', async () => {
    await fleetPage.goto(`${cloud.b.url}/#signup`);
    await byTestId(fleetPage, 'view-signup').waitFor({ state: 'visible' });
    // SPEC 5: a username begins with a letter or digit
    await byTestId(fleetPage, 'signup-username').fill('_bad.name');
    await byTestId(fleetPage, 'signup-email').fill(EMAIL);
    await byTestId(fleetPage, 'signup-send-code').click();
    const mail = await cloud.smtp!.waitFor(EMAIL, 20_000);
    const emailCode = /\b(\d{6})\b/.exec(mail.text)?.[1];
    expect(emailCode, mail.text).toBeDefined();
    await byTestId(fleetPage, 'signup-code').fill(emailCode!);
    await byTestId(fleetPage, 'signup-password').fill(FLEET_PW);
    await byTestId(fleetPage, 'signup-password2').fill(FLEET_PW);
    await byTestId(fleetPage, 'signup-region').selectOption('eu');
    await byTestId(fleetPage, 'signup-privacy').check();
    await byTestId(fleetPage, 'signup-submit').click();
    await expect
      .poll(() => byTestId(fleetPage, 'signup-username-error').textContent(), { timeout: 10_000 })
      .toMatch(/begins with a letter or digit/);
    expect(await cloud.query('SELECT 1 FROM accounts')).toEqual([]);

    await byTestId(fleetPage, 'signup-username').fill(USER);
    await byTestId(fleetPage, 'signup-submit').click();
    await byTestId(fleetPage, 'view-signin').waitFor({ state: 'visible', timeout: 20_000 });
    const rows = await cloud.query<{ username: string; email: string; region: string }>(
      'SELECT username, email, region FROM accounts',
    );
    expect(rows).toEqual([{ username: USER, email: EMAIL, region: 'eu' }]);

    await byTestId(fleetPage, 'signin-username').fill(USER);
    await byTestId(fleetPage, 'signin-password').fill('wrong-pw1');
    await byTestId(fleetPage, 'signin-submit').click();
    // the refusal itself (the status line still says "Account created" until it comes, and a
    // second submit while the first is in flight is not sent)
    await expect
      .poll(() => byTestId(fleetPage, 'status').textContent(), { timeout: 10_000 })
      .toMatch(/Invalid username or password/);
    expect(await byTestId(fleetPage, 'view-devices').isVisible()).toBe(false);
    await byTestId(fleetPage, 'signin-password').fill(FLEET_PW);
    await byTestId(fleetPage, 'signin-submit').click();
    await byTestId(fleetPage, 'view-devices').waitFor({ state: 'visible', timeout: 20_000 });
  }, 90_000);

  it("binds the QEMU device by the code it shows, entered on B's Add device; its agent is on A", async () => {
    qemuId = await bindByCode(qemu);
    const state = await cloudState(qemu);
    expect(state.replica).toBe(cloud.a.config.replica);
    const [row] = await cloud.query<{ replica: string; revoked_at: Date | null }>(
      'SELECT replica, revoked_at FROM devices WHERE id = $1',
      [qemuId],
    );
    expect(row).toEqual({ replica: cloud.a.config.replica, revoked_at: null });
    // the fleet's device list on B shows it online
    await expect
      .poll(
        async () => {
          await fleetPage.reload();
          return deviceRow(qemuId)
            .locator('[data-testid="device-online"]')
            .getAttribute('data-online', { timeout: 5_000 })
            .catch(() => null);
        },
        { timeout: 20_000 },
      )
      .toBe('true');
  }, 90_000);

  it('Chromium on B opens /d/<id>/ of the device on A and types into the QEMU guest', async () => {
    consolePage = await browser.context.newPage();
    await openThroughFleet(consolePage, qemuId);
    // the guest's shell is up once its USB keyboard is
    await expect
      .poll(async () => (await serial()).some((l) => /add QEMU QEMU USB Keyboard/.test(l)), {
        timeout: 90_000,
      })
      .toBe(true);
    await byTestId(consolePage, 'video-area').focus();
    await expect
      .poll(() => byTestId(consolePage, 'capture-indicator').getAttribute('data-state'))
      .toBe('captured-active');
    // The line typed, then the guest's screen read. A key the guest sees held past its repeat
    // delay (250 ms) repeats: at load 10 on this machine the first key of a line was seen held
    // 0.3-0.7 s now and then (keys go over the WebRTC data channel once it is open, peer to peer;
    // before, over /api/ws through the fleet). So a garbled line is typed again, at most five
    // times, and every attempt's longest hold is printed.
    let rows: string[] = [];
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      const mark = (await serial()).length;
      await pressLine(consolePage, 'echo through the fleet');
      rows = (await guestRows(consolePage)) ?? ['(no screen dump: `screen` garbled)'];
      const held = longestHold((await serial()).slice(mark));
      console.log(`cloud e2e: typing attempt ${attempt}: longest key hold ${held} ms in the guest`);
      if (rows.includes('guest# echo through the fleet')) break;
    }
    expect(rows, rows.join('\n')).toContain('guest# echo through the fleet');
    expect(rows, rows.join('\n')).toContain('through the fleet');
    // peer to peer on loopback: the stream info says so
    await expect.poll(() => streamConnection(consolePage), { timeout: 20_000 }).toMatch(/P2P/i);
  }, 180_000);

  it('forced through coturn (?ice=relay), the stream info says Relay', async () => {
    await openThroughFleet(consolePage, qemuId, '?ice=relay');
    await expect.poll(() => streamConnection(consolePage), { timeout: 30_000 }).toMatch(/Relay/);
  }, 120_000);

  it('a second device (testbed) opens in a second tab at the same time', async () => {
    const testbedId = await bindByCode(testbed);
    expect(testbedId).not.toBe(qemuId);
    const second = await browser.context.newPage();
    try {
      await openThroughFleet(second, testbedId);
      // each tab talks to its own device
      const ids = await Promise.all(
        [
          [consolePage, qemuId],
          [second, testbedId],
        ].map(([p, id]) => deviceIdThrough(p as Page, id as string)),
      );
      expect(ids).toEqual([qemuId, testbedId]);
    } finally {
      await second.close();
    }
  }, 120_000);

  it('replica A killed: the device is back on B within seconds, PostgreSQL lost nothing', async () => {
    const before = await cloud.rowCounts();
    const t0 = Date.now();
    await cloud.killReplica(0);
    await expect
      .poll(async () => (await cloudState(qemu)).replica, { timeout: 40_000, interval: 200 })
      .toBe(cloud.b.config.replica);
    const took = Date.now() - t0;
    console.log(`cloud e2e: the device was back on B ${took} ms after A was killed`);
    expect(took).toBeLessThan(35_000);
    const after = await cloud.rowCounts();
    // the event log only grows (connected, disconnected); every other table is unchanged
    for (const [table, n] of Object.entries(before)) {
      if (table === 'events') expect(after[table]).toBeGreaterThanOrEqual(n);
      else expect({ table, n: after[table] }).toEqual({ table, n });
    }
    // the console through B still reaches it
    expect(await deviceIdThrough(consolePage, qemuId)).toBe(qemuId);
    await cloud.startReplica(0);
  }, 120_000);

  it('unbound on the fleet: the device forgets its secret and says revoked', async () => {
    await fleetPage.goto(`${cloud.b.url}/devices`);
    await deviceRow(qemuId).locator('[data-testid="device-unbind"]').click();
    await byTestId(fleetPage, 'confirm-ok').click();
    await expect
      .poll(async () => (await cloudState(qemu)).state, { timeout: 30_000 })
      .toBe('revoked');
    expect((await cloudState(qemu)).bound).toBe(false);
    const [row] = await cloud.query<{ revoked: boolean }>(
      'SELECT revoked_at IS NOT NULL AS revoked FROM devices WHERE id = $1',
      [qemuId],
    );
    expect(row?.revoked).toBe(true);
    // the console through the fleet is closed to it now
    expect(typeof (await deviceIdThrough(consolePage, qemuId))).toBe('number');
  }, 60_000);

  it('unbound on the device: refused without the admin password, done with it; the fleet ends it too', async () => {
    const id = await bindByCode(qemu);
    const wrong = await device(qemu, 'POST', '/api/cloud/unbind', { passwd: 'not-the-pw' });
    expect(wrong.status).toBe(403);
    expect((await cloudState(qemu)).bound).toBe(true);
    const ok = await device(qemu, 'POST', '/api/cloud/unbind', { passwd: PASSWORD });
    expect(ok.status).toBe(200);
    expect((await cloudState(qemu)).bound).toBe(false);
    await expect
      .poll(
        async () =>
          (
            await cloud.query<{ revoked: boolean }>(
              'SELECT revoked_at IS NOT NULL AS revoked FROM devices WHERE id = $1',
              [id],
            )
          )[0]?.revoked,
        { timeout: 20_000 },
      )
      .toBe(true);
  }, 90_000);
});

/** The pids of `pid`'s descendants now (from /proc). */
async function descendants(pid: number): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (stat)
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
  }
  const out = new Set<number>([pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [p, pp] of parents) {
      if (!out.has(p) && out.has(pp)) {
        out.add(p);
        grew = true;
      }
    }
  }
  out.delete(pid);
  return [...out];
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm run cloud', () => {
  it('starts the engines and a fleet replica on loopback, prints how to bind, stops everything on SIGINT', async () => {
    const data = await mkdtemp(join(tmpdir(), 'kvm-e2e-cloud-run-'));
    // the postgres user reaches its data folder through this one
    await chmod(data, 0o755);
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [join(REPO_ROOT, 'scripts/cloud.mjs'), '--data', join(data, 'cloud'), '--port', String(port)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    let code: number | null | undefined;
    const exited = new Promise<number | null>((r) =>
      child.once('exit', (c) => {
        code = c;
        r(c);
      }),
    );
    try {
      await expect
        .poll(() => (code !== undefined ? `exited ${code}: ${out}` : out), {
          timeout: 90_000,
          interval: 200,
        })
        .toMatch(/^(?!exited)[\s\S]*Ctrl-C stops/);
      expect(out).toContain(`https://127.0.0.1:${port}`);
      expect(out).toContain('npm start');
      expect(out).toMatch(/SMTP sink .*development sink/);
      const res = await new Promise<number>((resolve, reject) => {
        const req = httpsRequest(`https://127.0.0.1:${port}/`, { rejectUnauthorized: false });
        req.once('response', (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        });
        req.once('error', reject);
        req.end();
      });
      expect(res).toBeGreaterThan(0);
      const kids = await descendants(child.pid!);
      const names = await Promise.all(
        kids.map((p) => readFile(`/proc/${p}/comm`, 'utf8').catch(() => '')),
      );
      for (const engine of ['postgres', 'nats-server', 'turnserver', 'node']) {
        expect(names.map((n) => n.trim())).toContain(engine);
      }
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      await expect.poll(() => kids.filter(alive), { timeout: 20_000 }).toEqual([]);
      // PostgreSQL's data stays for the next run
      expect((await readdir(join(data, 'cloud', 'pg'))).includes('PG_VERSION')).toBe(true);
    } finally {
      child.kill('SIGKILL');
      await rm(data, { recursive: true, force: true });
    }
  }, 150_000);
});

describe('deploy/cloud', () => {
  const deploy = join(REPO_ROOT, 'deploy/cloud');

  it('fleet.example.json is a replica config the fleet accepts, with every part set', async () => {
    const raw = JSON.parse(await readFile(join(deploy, 'fleet.example.json'), 'utf8')) as unknown;
    const config = parseConfig(raw, deploy);
    expect(config.publicUrl).toBe('https://fleet.example.com');
    expect(config.turn?.uris.length).toBeGreaterThan(0);
    expect(config.nats.length).toBeGreaterThan(0);
  });

  it('turnserver.conf: TURN REST credentials, and loopback or private peers refused', async () => {
    const lines = (await readFile(join(deploy, 'turnserver.conf'), 'utf8'))
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(lines).toContain('use-auth-secret');
    expect(lines.some((l) => l.startsWith('allow-loopback-peers'))).toBe(false);
    for (const range of ['127.0.0.0-127.255.255.255', '10.0.0.0-10.255.255.255']) {
      expect(lines).toContain(`denied-peer-ip=${range}`);
    }
  });

  it('nats-server.conf is valid for Debian nats-server', async () => {
    const { stdout, stderr } = await run(NATS_BIN, ['-c', join(deploy, 'nats-server.conf'), '-t']);
    expect(`${stdout}${stderr}`).toMatch(/is valid/);
  });
});
