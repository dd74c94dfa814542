/**
 * `POST /api/upgrade/start` and `status` over a real install folder (issue 12 item 4): GL's 200
 * in every case, the checks before anything is touched, the verified unpack into the idle slot,
 * the trial record the launcher boots from, and the exit that hands over.
 */
import { createPrivateKey } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp, createContext } from '../app';
import { buildConfig } from '../config';
import type { AppContext } from '../context';
import { keepTrial } from '../install/boot';
import { readTrial, setCurrent, writeOutcome, type InstallLayout } from '../install/install-dir';
import { loadConfigDefaults } from '../paths';
import {
  craftManifest,
  craftPackage,
  makePackage,
  makeTree,
} from '../services/upgrade/test-package';

let work = '';
/** Packages: good (V0.2.0, trusted key), stranger (another key), torn (a flipped byte). */
const pkgs = { good: '', stranger: '', torn: '', old: '' };

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'kvm-upgrade-start-'));
  await makeTree(join(work, 'tree'));
  await makePackage(work, ['--gen-key', join(work, 'k')]);
  await makePackage(work, ['--gen-key', join(work, 'other')]);
  const build = async (version: string, key: string, extra: string[] = []) =>
    (
      await makePackage(work, [
        '--from',
        join(work, 'tree'),
        '--version',
        version,
        '--key',
        join(work, key),
        '--out',
        join(work, 'out', `${key}-${version}`),
        ...extra,
      ])
    ).file;
  pkgs.good = await build('V0.2.0', 'k.key');
  pkgs.stranger = await build('V0.2.0', 'other.key');
  pkgs.old = await build('V0.3.0', 'k.key', ['--min-version', 'V0.2.5']);
  const bytes = await readFile(pkgs.good);
  // gzip's CRC catches a flipped byte anywhere in the stream
  bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
  pkgs.torn = join(work, 'torn.pkg');
  await writeFile(pkgs.torn, bytes);
}, 60_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

let app: FastifyInstance | null = null;
let ctx: AppContext | null = null;
let root = '';
/** Closes the app and removes its folders (between the cases of one test, and after each). */
async function teardown(): Promise<void> {
  await app?.close();
  app = null;
  ctx = null;
  await rm(root, { recursive: true, force: true });
}
afterEach(teardown);

interface Setup {
  post: (url: string) => Promise<Record<string, unknown>>;
  raw: (url: string) => Promise<LightMyRequestResponse>;
  get: (url: string) => Promise<Record<string, unknown>>;
  layout: InstallLayout;
  data: string;
  exits: () => number;
}

async function setup(
  opts: {
    install?: boolean;
    upgrade?: Record<string, unknown>;
    pkg?: string;
    /** The running version (package.json's spelling). */
    version?: string;
  } = {},
): Promise<Setup> {
  root = await mkdtemp(join(tmpdir(), 'kvm-upgrade-start-run-'));
  const data = join(root, 'data');
  const layout: InstallLayout = {
    factoryRoot: join(root, 'factory'),
    installDir: join(root, 'install'),
  };
  const config = buildConfig(
    {
      data_dir: data,
      target: 'testbed',
      webrtc: { stun_url: null },
      upgrade: { trusted_keys: [join(work, 'k.pub')], ...opts.upgrade },
    },
    loadConfigDefaults(),
  );
  // There before the server starts, as a package downloaded before a restart is.
  if (opts.pkg) {
    await mkdir(join(data, 'upgrade'), { recursive: true });
    await copyFile(opts.pkg, join(data, 'upgrade', 'update.pkg'));
  }
  let exits = 0;
  ctx = await createContext(config, opts.version ?? '0.1.0', undefined, {
    install: opts.install === false ? undefined : layout,
    exitForUpgrade: () => exits++,
  });
  app = await buildApp(ctx);
  const token = await ctx.auth.sessions.create('admin', 3_600_000);
  const a = app;
  const call = async (method: 'GET' | 'POST', url: string) => {
    const res = await a.inject({ method, url, headers: { token } });
    expect(res.statusCode).toBe(200);
    return res.json<{ result: Record<string, unknown> }>().result;
  };
  return {
    post: (url) => call('POST', url),
    get: (url) => call('GET', url),
    raw: (url) => a.inject({ method: 'POST', url, headers: { token } }),
    layout,
    data,
    exits: () => exits,
  };
}

describe('POST /api/upgrade/start', () => {
  it('unpacks a verified package into the idle slot, records the trial and hands over', async () => {
    const s = await setup({ pkg: pkgs.good });
    const answer = await s.post('/api/upgrade/start');
    expect(answer).toMatchObject({
      status: 'Upgrade started',
      signature_valid: true,
      firmware_valid: true,
      version: 'V0.2.0',
      stderr: '',
    });
    const slot = join(s.layout.installDir, 'slots', 'a');
    expect(JSON.parse(await readFile(join(slot, 'package.json'), 'utf8'))).toMatchObject({
      version: '0.2.0',
    });
    expect(await readFile(join(slot, 'server', 'dist', 'main.js'), 'utf8')).toContain('hello');
    expect(readTrial(s.layout)).toMatchObject({
      id: answer['id'],
      from_slot: 'factory',
      to_slot: 'a',
      from_version: 'V0.1.0',
      to_version: 'V0.2.0',
      save_config: true,
      data_dir: s.data,
      attempts: 0,
    });
    // GL: the answer first, the restart a second later
    expect(s.exits()).toBe(0);
    await expect.poll(() => s.exits(), { timeout: 5000 }).toBe(1);
    expect(await s.get('/api/upgrade/status')).toMatchObject({
      can_install: true,
      in_progress: true,
    });
    // one at a time
    expect(await s.post('/api/upgrade/start')).toMatchObject({
      status: 'Upgrade failed',
      message: 'An upgrade is already in progress',
    });
  });

  it('takes the slot that is not running and save_config=false / 0', async () => {
    const s = await setup({ pkg: pkgs.good });
    await mkdir(join(s.layout.installDir, 'slots', 'a', 'server', 'dist'), { recursive: true });
    await writeFile(join(s.layout.installDir, 'slots', 'a', 'package.json'), '{}');
    await writeFile(join(s.layout.installDir, 'slots', 'a', 'server', 'dist', 'main.js'), '');
    setCurrent(s.layout, 'a');
    expect(await s.post('/api/upgrade/start?save_config=0')).toMatchObject({
      status: 'Upgrade started',
    });
    expect(readTrial(s.layout)).toMatchObject({ from_slot: 'a', to_slot: 'b', save_config: false });
    // the running slot is untouched
    expect(await readFile(join(s.layout.installDir, 'slots', 'a', 'package.json'), 'utf8')).toBe(
      '{}',
    );
  });

  it('refuses a foreign signature, a torn package and a too-old device, 200 with the flags', async () => {
    for (const [pkg, flags, reason] of [
      // The first failed check ends the read: an untrusted package's files are never checked.
      [pkgs.stranger, { signature_valid: false, firmware_valid: false }, /trusted key/],
      [pkgs.torn, { firmware_valid: false }, /./],
      [pkgs.old, { signature_valid: true, firmware_valid: false }, /V0\.2\.5 or later/],
    ] as const) {
      const s = await setup({ pkg });
      const answer = await s.post('/api/upgrade/start');
      expect(answer).toMatchObject({ status: 'Upgrade failed', ...flags });
      expect(answer['message']).toMatch(reason);
      // nothing left behind, nothing handed over
      expect(readTrial(s.layout)).toBeNull();
      const slots = await readdir(join(s.layout.installDir, 'slots')).catch(() => []);
      expect(slots).toEqual([]);
      await new Promise((r) => setTimeout(r, 1200));
      expect(s.exits()).toBe(0);
      await teardown();
    }
  }, 30_000);

  it('skip_verify installs an untrusted signature only when the config allows it', async () => {
    let s = await setup({ pkg: pkgs.stranger });
    expect(await s.post('/api/upgrade/start?skip_verify=true')).toMatchObject({
      status: 'Upgrade failed',
      message: 'skip_verify is not allowed on this device (upgrade.allow_skip_verify)',
    });
    await teardown();
    s = await setup({ pkg: pkgs.stranger, upgrade: { allow_skip_verify: true } });
    expect(await s.post('/api/upgrade/start?skip_verify=1')).toMatchObject({
      status: 'Upgrade started',
      signature_valid: false,
      firmware_valid: true,
    });
    // a torn package is refused even then
    await teardown();
    s = await setup({ pkg: pkgs.torn, upgrade: { allow_skip_verify: true } });
    expect(await s.post('/api/upgrade/start?skip_verify=1')).toMatchObject({
      status: 'Upgrade failed',
      firmware_valid: false,
    });
  });

  it('refuses an unsigned gzip bomb and a signed package naming a path outside the release tree', async () => {
    const GiB = 1024 * 1024 * 1024;
    const bomb = join(work, 'bomb.pkg');
    await craftPackage(
      bomb,
      craftManifest([{ path: 'server/dist/main.js', size: 4 * GiB }]),
      null,
      [{ path: 'server/dist/main.js', zeros: 4 * GiB }],
    );
    const key = createPrivateKey(await readFile(join(work, 'k.key')));
    const outside = join(work, 'outside.pkg');
    const files = [
      { path: 'package.json', data: '{"version":"0.2.0"}' },
      { path: 'server/dist/main.js', data: 'x' },
      { path: 'server/launcher.js', data: 'process.exit(0)' },
    ];
    await craftPackage(outside, craftManifest(files), key, files);
    for (const [pkg, answer] of [
      [
        bomb,
        {
          signature_valid: false,
          firmware_valid: false,
          message: 'the signature is not from a trusted key',
        },
      ],
      [
        outside,
        {
          signature_valid: true,
          firmware_valid: false,
          message:
            'manifest: "server/launcher.js" is outside package.json, server/dist and web/dist',
        },
      ],
    ] as const) {
      const s = await setup({ pkg });
      expect(await s.post('/api/upgrade/start')).toMatchObject({
        status: 'Upgrade failed',
        ...answer,
      });
      expect(readTrial(s.layout)).toBeNull();
      expect(await readdir(join(s.layout.installDir, 'slots')).catch(() => [])).toEqual([]);
      await teardown();
    }
  });

  it('refuses an older release with 409 until the admin confirms the downgrade (issue 21)', async () => {
    // V0.3.0 runs; the waiting package is a signed, valid V0.2.0.
    let s = await setup({ pkg: pkgs.good, version: '0.3.0' });
    const refused = await s.raw('/api/upgrade/start');
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({
      ok: false,
      result: {
        error: 'UpgradeDowngradeError',
        error_msg:
          'The package (V0.2.0) is older than the running version (V0.3.0): confirm the downgrade (allow_downgrade=1) to install it',
        package_version: 'V0.2.0',
        local_version: 'V0.3.0',
      },
    });
    // Nothing unpacked, nothing handed over; the package waits for the confirmed start.
    expect(readTrial(s.layout)).toBeNull();
    expect(await readdir(join(s.layout.installDir, 'slots')).catch(() => [])).toEqual([]);
    expect(existsSync(join(s.data, 'upgrade', 'update.pkg'))).toBe(true);
    // allow_downgrade=0 is no confirmation.
    expect((await s.raw('/api/upgrade/start?allow_downgrade=0')).statusCode).toBe(409);
    const started = await s.post('/api/upgrade/start?allow_downgrade=1');
    expect(started).toMatchObject({ status: 'Upgrade started', version: 'V0.2.0' });
    expect(readTrial(s.layout)).toMatchObject({ from_version: 'V0.3.0', to_version: 'V0.2.0' });
    await teardown();
    // A newer release needs no flag (and the flag changes nothing for it).
    s = await setup({ pkg: pkgs.good, version: '0.1.0' });
    expect(await s.post('/api/upgrade/start?allow_downgrade=1')).toMatchObject({
      status: 'Upgrade started',
    });
  });

  it('answers why it cannot start: no package, no launcher', async () => {
    let s = await setup();
    expect(await s.post('/api/upgrade/start')).toEqual({
      status: 'Upgrade failed',
      message: 'No firmware package: download or upload one first',
      stdout: '',
      stderr: '',
    });
    await teardown();
    s = await setup({ install: false, pkg: pkgs.good });
    expect(await s.post('/api/upgrade/start')).toMatchObject({
      status: 'Upgrade failed',
      message: expect.stringMatching(/does not run under the launcher/) as unknown,
    });
    expect(await s.get('/api/upgrade/status')).toMatchObject({ can_install: false });
  });
});

describe('GET /api/upgrade/status and download_info after a restart', () => {
  it('reports the last outcome the launcher wrote', async () => {
    const s = await setup();
    const outcome = {
      id: 'x1',
      result: 'failed' as const,
      from_version: 'V0.1.0',
      to_version: 'V0.2.0',
      reason: 'V0.2.0 exited with code 1 before it was ready',
      reason_key: { code: 'exited' as const, exit_code: 1 },
      save_config: true,
      finished_at: new Date().toISOString(),
    };
    writeOutcome(s.layout, outcome);
    expect(await s.get('/api/upgrade/status')).toEqual({
      enabled: true,
      can_install: true,
      in_progress: false,
      last_upgrade: outcome,
    });
  });

  it('the kept upgrade removes its package: download_info answers zeros again (issue 21)', async () => {
    const s = await setup({ pkg: pkgs.good });
    const size = (await readFile(pkgs.good)).length;
    expect(await s.get('/api/upgrade/download_info')).toEqual({ size, total_size: size });
    // The new version is healthy: the launcher keeps the trial, which removes the package.
    keepTrial(s.layout, {
      id: 't1',
      from_slot: 'factory',
      to_slot: 'a',
      from_version: 'V0.1.0',
      to_version: 'V0.2.0',
      save_config: true,
      data_dir: s.data,
      data_aside: null,
      attempts: 1,
      created_at: new Date().toISOString(),
    });
    expect(existsSync(join(s.data, 'upgrade', 'update.pkg'))).toBe(false);
    // Not a download stuck at 0 % of the old size: nothing at all.
    expect(await s.get('/api/upgrade/download_info')).toEqual({ size: 0, total_size: 0 });
  });

  it('a complete package keeps its total_size; a torn part file is removed', async () => {
    const s = await setup({ pkg: pkgs.good });
    await writeFile(join(s.data, 'upgrade', 'update.pkg.part'), 'half');
    await app!.close();
    // the device restarts with the package waiting
    const config = buildConfig(
      { data_dir: s.data, target: 'testbed', webrtc: { stun_url: null } },
      loadConfigDefaults(),
    );
    ctx = await createContext(config, '0.1.0');
    app = await buildApp(ctx);
    const size = (await readFile(pkgs.good)).length;
    expect(await ctx.upgrade.downloadInfo()).toEqual({ size, total_size: size });
    expect(existsSync(join(s.data, 'upgrade', 'update.pkg.part'))).toBe(false);
  });
});
