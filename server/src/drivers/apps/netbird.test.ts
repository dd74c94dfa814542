import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildConfig } from '../../config';
import { loadConfigDefaults } from '../../paths';
import { CommandError, type CommandRunner, type RunOptions } from '../../process/run';
import { AppToolError } from './cli-app';
import { loginUrlOf, NetbirdApp, netbirdView, parseNetbirdStatus } from './netbird';
import { answer, fakeDaemon, fixtureReader, RECORDED, testHost } from './apps-test-kit';

const fixture = fixtureReader('netbird');

let dir: string;
let apps: NetbirdApp[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-netbird-'));
});
afterEach(async () => {
  await Promise.all(apps.map((a) => a.dispose()));
  apps = [];
  await rm(dir, { recursive: true, force: true });
});

type Call = { file: string; args: readonly string[]; opts: RunOptions | undefined };
type Handler = (args: readonly string[], opts: RunOptions | undefined) => Promise<string>;

function fail(stderr: string, code = 1): CommandError {
  return new CommandError('netbird', [], { code, stderr });
}

/** A runner answering `netbird <command>` from `handlers` (by the command after the global args). */
function fakeRunner(handlers: Record<string, Handler>, calls: Call[] = []): CommandRunner {
  return async (file, args, opts) => {
    calls.push({ file, args, opts });
    // args: --daemon-addr=<addr> <command> ...
    const command = args[1] ?? '';
    const h = handlers[command];
    if (!h) throw fail(`unknown command "${command}" for "netbird"`);
    return { stdout: await h(args.slice(1), opts), stderr: '' };
  };
}

function config(overrides: Record<string, unknown> = {}) {
  return buildConfig({ data_dir: dir, target: 'testbed', apps: overrides }, loadConfigDefaults())
    .apps;
}

async function makeApp(
  handlers: Record<string, Handler>,
  opts: {
    installed?: boolean;
    calls?: Call[];
    cfg?: Record<string, unknown>;
    rssBytes?: number;
  } = {},
): Promise<NetbirdApp> {
  const daemon = await fakeDaemon(dir, 'netbird');
  const host = testHost(
    dir,
    fakeRunner({ version: async () => fixture('version.txt'), ...handlers }, opts.calls),
  );
  const app = new NetbirdApp(host, config({ netbird: { tool: daemon }, ...opts.cfg }), {
    findExecutable: (c) => (opts.installed === false ? null : c),
    readRss: async () => opts.rssBytes ?? 50 * 1024 * 1024,
  });
  apps.push(app);
  return app;
}

describe('parseNetbirdStatus / netbirdView (recorded outputs)', () => {
  it('connected: addresses without prefix, the management URL, peers', () => {
    const v = netbirdView(parseNetbirdStatus(fixture('status-connected.json')), null);
    expect(v).toMatchObject({
      state: 'connected',
      detail: null,
      netbirdIp: '100.92.7.23/16',
      addresses: ['100.92.7.23'],
      connected: true,
      fqdn: 'glkvm-rm1.netbird.cloud',
      managementUrl: 'https://api.netbird.io:443',
      peersTotal: 2,
      peersConnected: 2,
    });
  });

  it('management not connected with an error: unreachable, the error in the detail', () => {
    const v = netbirdView(parseNetbirdStatus(fixture('status-management-down.json')), null);
    expect(v.state).toBe('unreachable');
    expect(v.detail).toContain('https://netbird.example.lan:443');
    expect(v.detail).toContain('connection refused');
  });

  it('connecting without an error yet: connecting', () => {
    const v = netbirdView(parseNetbirdStatus(fixture('status-connecting.json')), null);
    expect(v.state).toBe('connecting');
  });

  it("an older client's JSON without daemonStatus: the management flag decides", () => {
    const v = netbirdView(parseNetbirdStatus(fixture('status-old-client.json')), null);
    expect(v.state).toBe('connected');
    expect(v.addresses).toEqual(['192.168.178.100']);
  });

  it('the not-logged-in text: needs_login, with the waiting SSO page when there is one', () => {
    const out = parseNetbirdStatus(fixture('status-needs-login.txt'));
    expect(out).toEqual({ kind: 'login', daemonStatus: 'NeedsLogin' });
    expect(netbirdView(out, null).state).toBe('needs_login');
    expect(netbirdView(out, 'https://login.example/x').detail).toContain('https://login.example/x');
    const expired = netbirdView(parseNetbirdStatus(fixture('status-session-expired.txt')), null);
    expect(expired).toMatchObject({ state: 'needs_login' });
    expect(expired.detail).toContain('expired');
  });

  it('garbage is an unreadable-output error', () => {
    expect(() => parseNetbirdStatus('\u0000\u0001garbage')).toThrow(/unreadable \(not JSON\)/);
    expect(() => parseNetbirdStatus('{"management": 5}')).toThrow(/unreadable \(unexpected JSON\)/);
    expect(() => parseNetbirdStatus('[1,2]')).toThrow(AppToolError);
  });

  it('finds the SSO page in up, not the documentation link', () => {
    expect(loginUrlOf(fixture('up-sso.txt'))).toBe(
      'https://login.netbird.io/activate?user_code=QWER-TYUI',
    );
    expect(loginUrlOf('See https://docs.netbird.io/how-to/x')).toBeNull();
  });
});

describe('NetbirdApp', () => {
  it('not installed: its summary says so, start refuses with the program named', async () => {
    const app = await makeApp({}, { installed: false });
    const s = await app.summary();
    expect(s).toMatchObject({ id: 'netbird', installed: false, state: 'not_installed' });
    expect(s.detail).toMatch(/is not installed on this device/);
    await expect(app.start()).rejects.toThrow(/is not installed on this device/);
  });

  it('stopped until started; started and logged in: connected with the device address', async () => {
    const app = await makeApp({ status: answer(fixture('status-connected.json')) });
    expect((await app.summary()).state).toBe('stopped');
    expect(await app.start()).toEqual({ success: true, err_msg: '', running: true });
    const s = await app.summary();
    expect(s).toMatchObject({
      state: 'connected',
      running: true,
      addresses: ['100.92.7.23'],
      control_url: 'https://api.netbird.io:443',
      version: '0.36.5',
    });
    expect(await app.info()).toMatchObject(RECORDED.netbirdInfo);
    // the choice is kept: init after a restart starts it again
    expect((await app.getConfig()).enable).toBe(true);
    expect(await app.stop()).toEqual({ success: true, err_msg: '', running: false });
    expect((await app.summary()).state).toBe('stopped');
  });

  it('the daemon runs with its config, socket and state in the data folder', async () => {
    const calls: Call[] = [];
    const app = await makeApp({ status: answer(fixture('status-connected.json')) }, { calls });
    await app.start();
    await app.summary();
    const status = calls.find((c) => c.args.includes('status'));
    expect(status?.args).toEqual([
      `--daemon-addr=unix://${join(dir, 'run', 'netbird.sock')}`,
      'status',
      '--json',
    ]);
  });

  it('a hung status: error naming the timeout; a non-zero exit: what it said', async () => {
    const app = await makeApp(
      {
        status: async () => {
          throw new CommandError('netbird', ['status'], { timedOut: true, timeoutMs: 1000 });
        },
      },
      { cfg: { command_timeout_ms: 1000 } },
    );
    await app.start();
    // the stand-in daemon is a real process: on a loaded machine it may not be running yet
    await expect
      .poll(async () => app.summary(), { timeout: 15_000, interval: 50 })
      .toMatchObject({ state: 'error', detail: 'netbird status did not answer within 1 s' });

    const app2 = await makeApp({
      status: async () => {
        throw fail('Error: status failed: boom');
      },
    });
    await app2.start();
    await expect
      .poll(async () => (await app2.summary()).detail, { timeout: 15_000, interval: 50 })
      .toContain('boom');
  });

  it('garbage from status: error "unreadable", never a crash', async () => {
    const app = await makeApp({ status: answer('not json at all \u00ff') });
    await app.start();
    const info = await app.info();
    expect(info).toMatchObject({ state: 'error', success: false });
    expect(info.err_msg).toContain('unreadable');
  });

  it('the daemon not answering yet right after the start: starting', async () => {
    const app = await makeApp({
      status: async () => {
        throw fail(fixture('no-daemon.stderr'));
      },
    });
    await app.start();
    expect((await app.summary()).state).toBe('starting');
  });

  it('login with a setup key: up with the key, the management URL and --disable-dns; the key never in an error', async () => {
    const calls: Call[] = [];
    const key = 'A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF';
    const app = await makeApp({ up: answer(fixture('up-connected.txt')) }, { calls });
    await app.setConfig({ management_url: 'https://netbird.example.lan' });
    await app.start();
    expect(await app.login(key)).toEqual({
      success: true,
      err_msg: '',
      login_url: '',
      login_type: 'setup_key',
    });
    const up = calls.find((c) => c.args.includes('up'));
    expect(up?.args.slice(1)).toEqual([
      'up',
      '--disable-dns',
      '--management-url=https://netbird.example.lan',
      `--setup-key=${key}`,
    ]);

    const bad = await makeApp({
      up: async () => {
        throw fail(fixture('up-bad-key.stderr').replace('setup key is invalid', `key ${key}`));
      },
    });
    await bad.start();
    const err = await bad.login(key).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(AppToolError);
    expect(err?.message).toContain('PermissionDenied');
    expect(err?.message).not.toContain(key);
  });

  it('login without a key: the SSO page at once, the login going on in the background', async () => {
    let finish: (() => void) | null = null;
    const app = await makeApp({
      up: (_args, opts) =>
        new Promise<string>((resolve, reject) => {
          opts?.onStdout?.(fixture('up-sso.txt'));
          finish = () => resolve(`${fixture('up-sso.txt')}Connected\n`);
          opts?.signal?.addEventListener('abort', () => reject(fail('killed')));
        }),
      status: answer(fixture('status-needs-login.txt')),
    });
    await app.start();
    const answerSso = await app.login(null);
    expect(answerSso).toEqual({
      success: true,
      err_msg: '',
      login_url: 'https://login.netbird.io/activate?user_code=QWER-TYUI',
      login_type: 'oauth',
    });
    const info = await app.info();
    expect(info.login_url).toBe('https://login.netbird.io/activate?user_code=QWER-TYUI');
    expect(info).toMatchObject({
      state: 'needs_login',
      success: false,
      err_msg: 'netbird not logged in',
    });
    expect(info.detail).toContain('QWER-TYUI');
    // the user logged in: the command ends, the page is gone
    (finish as unknown as () => void)();
    for (let i = 0; i < 100 && (await app.info()).login_url !== ''; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await app.info()).login_url).toBe('');
  });

  it('a waiting SSO login is killed by a stop (and by a new login)', async () => {
    let aborted = 0;
    const app = await makeApp({
      up: (_args, opts) =>
        new Promise<string>((_resolve, reject) => {
          opts?.onStdout?.(fixture('up-sso.txt'));
          opts?.signal?.addEventListener('abort', () => {
            aborted++;
            reject(fail('killed'));
          });
        }),
    });
    await app.start();
    await app.login(null);
    await app.login(null);
    expect(aborted).toBe(1);
    await app.stop();
    expect(aborted).toBe(2);
    expect((await app.info()).login_url).toBe('');
  });

  it('login without a key that prints no URL in time: an error, the command killed', async () => {
    let aborted = false;
    const app = await makeApp(
      {
        up: (_args, opts) =>
          new Promise<string>((_resolve, reject) => {
            opts?.signal?.addEventListener('abort', () => {
              aborted = true;
              reject(fail('killed'));
            });
          }),
      },
      { cfg: { command_timeout_ms: 500 } },
    );
    await app.start();
    await expect(app.login(null)).rejects.toThrow('netbird up printed no login URL within 500 ms');
    expect(aborted).toBe(true);
  });

  it("login or logout while the daemon is not running: GL's answer, nothing run", async () => {
    const calls: Call[] = [];
    const app = await makeApp({}, { calls });
    expect(await app.login('A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF')).toEqual({
      success: false,
      err_msg: 'netbird process is not running',
      login_url: '',
      login_type: '',
    });
    expect(await app.logout()).toEqual({
      success: false,
      err_msg: 'netbird process is not running',
    });
    expect(calls.filter((c) => !c.args.includes('version'))).toEqual([]);
  });

  it('logout runs netbird logout; a client without it: netbird down', async () => {
    const calls: Call[] = [];
    const app = await makeApp({ logout: answer(fixture('logout.txt')) }, { calls });
    await app.start();
    expect(await app.logout()).toEqual({ success: true, err_msg: '' });
    expect(calls.some((c) => c.args[1] === 'logout')).toBe(true);

    const old: Call[] = [];
    const app2 = await makeApp({ down: answer('') }, { calls: old });
    await app2.start();
    expect(await app2.logout()).toEqual({ success: true, err_msg: '' });
    expect(old.some((c) => c.args[1] === 'down')).toBe(true);
  });

  it('over its memory cap: the daemon is stopped and the app says why', async () => {
    const app = await makeApp(
      { status: answer(fixture('status-connected.json')) },
      { rssBytes: 300 * 1024 * 1024 },
    );
    await app.start();
    for (let i = 0; i < 3 && app.daemon.running; i++) await app.daemon.sample();
    const s = await app.summary();
    expect(s.state).toBe('error');
    expect(s.detail).toBe('stopped: used 300 MiB, over the cap of 128 MiB');
    expect(s.running).toBe(false);
  });

  it('options: routes refused, DNS left to NetBird', async () => {
    const calls: Call[] = [];
    const app = await makeApp({ up: answer('Connected\n') }, { calls });
    await app.setConfig({ disable_dns: false, accept_routes: false });
    await app.start();
    await app.login('A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF');
    const up = calls.find((c) => c.args.includes('up'));
    expect(up?.args).toContain('--disable-client-routes');
    expect(up?.args).not.toContain('--disable-dns');
  });
});
