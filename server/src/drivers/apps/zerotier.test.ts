import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildConfig } from '../../config';
import { loadConfigDefaults } from '../../paths';
import { CommandError, type CommandRunner } from '../../process/run';
import { answer, fakeDaemon, fixtureReader, RECORDED, testHost } from './apps-test-kit';
import { ZerotierApp, zerotierInfoSchema, zerotierNetworksSchema, zerotierView } from './zerotier';

const fixture = fixtureReader('zerotier');
const info = (name: string) => zerotierInfoSchema.parse(JSON.parse(fixture(name)));
const nets = (name: string) => zerotierNetworksSchema.parse(JSON.parse(fixture(name)));

let dir: string;
let apps: ZerotierApp[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-zerotier-'));
});
afterEach(async () => {
  await Promise.all(apps.map((a) => a.dispose()));
  apps = [];
  await rm(dir, { recursive: true, force: true });
});

type Handler = (args: readonly string[]) => Promise<string>;

/** zerotier-cli prints its errors on stdout and exits non-zero. */
function failOut(stdout: string, code = 1): CommandError {
  return new CommandError('zerotier-cli', [], { code, stdout });
}

async function makeApp(
  handlers: Record<string, Handler>,
  opts: { installed?: boolean; calls?: string[][]; cfg?: Record<string, unknown> } = {},
): Promise<ZerotierApp> {
  const daemon = await fakeDaemon(dir, 'zerotier-one');
  const runner: CommandRunner = async (_file, args) => {
    // args: -D<home> [-j] <command> ...
    const rest = args.slice(1);
    opts.calls?.push(rest);
    const key = rest[0] === '-j' ? `-j ${rest[1]}` : (rest[0] ?? '');
    const h = handlers[key] ?? (key === '-v' ? async () => fixture('version.txt') : undefined);
    if (!h) throw failOut('unknown command');
    return { stdout: await h(rest), stderr: '' };
  };
  const host = testHost(dir, runner);
  const apps_ = buildConfig(
    {
      data_dir: dir,
      target: 'testbed',
      apps: { zerotier: { cli: join(dir, 'zerotier-cli'), daemon }, ...opts.cfg },
    },
    loadConfigDefaults(),
  ).apps;
  const app = new ZerotierApp(host, apps_, {
    findExecutable: (c) => (opts.installed === false ? null : c),
    readRss: async () => 10 * 1024 * 1024,
    retryDelayMs: 0,
  });
  apps.push(app);
  return app;
}

describe('zerotierView (recorded outputs)', () => {
  it('OK with addresses: connected, addresses without prefix', () => {
    expect(zerotierView(info('info-online.json'), nets('listnetworks-ok.json'))).toEqual({
      state: 'connected',
      detail: null,
      addresses: ['10.147.17.5', 'fd48:d602:3c46:856f:eb99:93a5:8298:793a'],
    });
  });

  it('offline: unreachable', () => {
    expect(zerotierView(info('info-offline.json'), nets('listnetworks-ok.json')).state).toBe(
      'unreachable',
    );
  });

  it('no network: needs_login, asking for a network id', () => {
    const v = zerotierView(info('info-online.json'), nets('listnetworks-empty.json'));
    expect(v.state).toBe('needs_login');
    expect(v.detail).toContain('16-digit network id');
  });

  it('ACCESS_DENIED: needs_login naming this device and the controller', () => {
    const v = zerotierView(info('info-online.json'), nets('listnetworks-access-denied.json'));
    expect(v.state).toBe('needs_login');
    expect(v.detail).toContain('a58298793a');
    expect(v.detail).toContain('48d6023c46');
  });

  it('REQUESTING_CONFIGURATION: connecting; NOT_FOUND: error', () => {
    expect(zerotierView(info('info-online.json'), nets('listnetworks-requesting.json')).state).toBe(
      'connecting',
    );
    const nf = zerotierView(info('info-online.json'), nets('listnetworks-not-found.json'));
    expect(nf.state).toBe('error');
    expect(nf.detail).toContain('does not exist');
  });
});

describe('ZerotierApp', () => {
  it('not installed (the daemon missing too): not_installed naming both', async () => {
    const app = await makeApp({}, { installed: false });
    const s = await app.status();
    expect(s).toMatchObject({ enabled: false, process_running: false, installed: false });
    expect(s.state).toBe('not_installed');
    expect(s.detail).toBe('zerotier-cli and zerotier-one is not installed on this device');
    await expect(app.start()).rejects.toThrow(/is not installed/);
  });

  it("started and joined: GL's status fields of the first network, then ours", async () => {
    const app = await makeApp({
      '-j info': answer(fixture('info-online.json')),
      '-j listnetworks': answer(fixture('listnetworks-ok.json')),
    });
    expect((await app.status()).state).toBe('stopped');
    expect(await app.start()).toEqual({ success: true, output: '', process_running: true });
    const s = await app.status();
    expect(s).toMatchObject({ ...RECORDED.zerotierStatus, online: true, version: '1.14.2' });
    expect(s.networks[0]).toMatchObject({ allow_managed: true, allow_default: false });
    const summary = await app.summary();
    expect(summary).toMatchObject({
      state: 'connected',
      addresses: ['10.147.17.5', 'fd48:d602:3c46:856f:eb99:93a5:8298:793a'],
      control_url: 'zerotier:48d6023c46',
    });
    // its home has local.conf with the updates off and the port
    const conf = JSON.parse(await readFile(join(app.home, 'local.conf'), 'utf8'));
    expect(conf).toEqual({ settings: { primaryPort: 9993, softwareUpdate: 'disable' } });
    expect(await app.stop()).toEqual({ success: true, output: '', process_running: false });
  });

  it('the service not answering: starting just after the start, its words in the detail', async () => {
    const app = await makeApp({
      '-j info': async () => {
        throw failOut(fixture('not-running.txt'));
      },
    });
    await app.start();
    expect((await app.status()).state).toBe('starting');
  });

  it('a hung CLI: error naming the timeout; garbage: unreadable', async () => {
    const hung = await makeApp(
      {
        '-j info': async () => {
          throw new CommandError('zerotier-cli', [], { timedOut: true, timeoutMs: 2000 });
        },
      },
      { cfg: { command_timeout_ms: 2000 } },
    );
    await hung.start();
    expect(await hung.summary()).toMatchObject({
      state: 'error',
      detail: 'zerotier-cli info did not answer within 2 s',
    });
    const garbage = await makeApp({
      '-j info': answer(fixture('info-online.json')),
      '-j listnetworks': answer('200 listnetworks <nwid> <name>'),
    });
    await garbage.start();
    const s = await garbage.status();
    expect(s.state).toBe('error');
    expect(s.detail).toBe('zerotier-cli listnetworks printed something unreadable (not JSON)');
  });

  it("set_token leaves the other networks (keeping the identity) and joins; GL's answer", async () => {
    const calls: string[][] = [];
    const app = await makeApp(
      {
        '-j listnetworks': answer(fixture('listnetworks-ok.json')),
        leave: answer(fixture('leave-ok.txt')),
        join: answer(fixture('join-ok.txt')),
      },
      { calls },
    );
    await app.start();
    expect(await app.setToken('8056c2e21c000001')).toEqual({
      success: true,
      message: 'Token updated successfully',
      join_output: '200 join OK',
      attempts: 1,
    });
    expect(calls).toContainEqual(['leave', '48d6023c46856feb']);
    expect(calls).toContainEqual(['join', '8056c2e21c000001']);
  });

  it('join retries as GL does, then fails with what zerotier-cli said', async () => {
    let tries = 0;
    const app = await makeApp({
      join: async () => {
        tries++;
        if (tries < 3) throw failOut(fixture('not-running.txt'));
        return fixture('join-ok.txt');
      },
    });
    await app.start();
    expect((await app.join('8056c2e21c000001')).attempts).toBe(3);

    const never = await makeApp({
      join: async () => {
        throw failOut('500 join {}');
      },
    });
    await never.start();
    await expect(never.join('8056c2e21c000001')).rejects.toThrow(
      'zerotier-cli join failed: 500 join {}',
    );
  });

  it('join while stopped: a clear error, nothing run', async () => {
    const calls: string[][] = [];
    const app = await makeApp({}, { calls });
    await expect(app.join('8056c2e21c000001')).rejects.toThrow('ZeroTier is not running');
    expect(calls.filter((c) => c[0] !== '-v')).toEqual([]);
  });

  it('set: one zerotier-cli set per setting, the network after', async () => {
    const calls: string[][] = [];
    const app = await makeApp(
      {
        set: answer('{}'),
        '-j listnetworks': answer(fixture('listnetworks-allow-default.json')),
      },
      { calls },
    );
    await app.start();
    const n = await app.set('48d6023c46856feb', { allowDefault: true, allowGlobal: false });
    expect(calls).toContainEqual(['set', '48d6023c46856feb', 'allowDefault=1']);
    expect(calls).toContainEqual(['set', '48d6023c46856feb', 'allowGlobal=0']);
    expect(n).toMatchObject({ nwid: '48d6023c46856feb', allow_default: true });
    await expect(app.set('8056c2e21c000001', { allowDNS: true })).rejects.toThrow(
      'This device is not in network 8056c2e21c000001',
    );
  });
});
