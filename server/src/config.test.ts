import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildConfig, ConfigError, parseHostPort, readConfigFile } from './config';
import { CliError, mergeConfig, parseCli } from './cli';
import { testTempDir } from './test-temp';

const defaults = {
  dataDir: '/tmp/kvm-data',
  webDir: '/tmp/kvm-web',
  keymapsDirs: ['/tmp/kvm-keymaps'],
};

describe('config', () => {
  it('fills every default', () => {
    const cfg = buildConfig({}, defaults);
    expect(cfg.target).toBe('qemu');
    expect(cfg.data_dir).toBe('/tmp/kvm-data');
    expect(cfg.server.listen).toEqual({ host: '0.0.0.0', port: 8443 });
    expect(cfg.server.tls).toBe(true);
    expect(cfg.server.redirect_listen).toEqual({ host: '0.0.0.0', port: 8080 });
    expect(cfg.auth.session_expire_s).toBe(43200);
    expect(cfg.auth.rate_limit).toEqual({ max_failures: 10, window_s: 600, lock_s: 600 });
    expect(Object.isFrozen(cfg.server)).toBe(true);
  });

  it('the gadget target and its paths (every one from config, for fixture trees)', () => {
    const cfg = buildConfig({ target: 'gadget' }, defaults);
    expect(cfg.target).toBe('gadget');
    expect(cfg.gadget).toEqual({
      configfs: '/sys/kernel/config',
      sys: '/sys',
      dev: '/dev',
      name: 'kvm',
      udc: '',
      udc_poll_ms: 250,
      hid_write_timeout_ms: 500,
      uac2: true,
      // the USB webcam and our frame server for it (issue 24)
      uvc: true,
      uvc_stream: 'server/dist/uvc-stream',
      msd_partition_device: '/dev/block/by-name/media',
    });
    // the gadget's UAC2 card for the ALSA sound driver
    expect(cfg.audio).toEqual({
      type: 'target',
      alsa: { card: 'UAC2Gadget', device: 0, proc: '/proc/asound' },
    });
    expect(() => buildConfig({ audio: { alsa: { card: '../x' } } }, defaults)).toThrow(
      /audio\.alsa\.card/,
    );
    // a name becomes a folder under usb_gadget, a UDC a name under class/udc: no path in either
    expect(() => buildConfig({ gadget: { name: '../x' } }, defaults)).toThrow(/gadget\.name/);
    expect(() => buildConfig({ gadget: { udc: 'a/b' } }, defaults)).toThrow(/gadget\.udc/);
    expect(() => buildConfig({ gadget: { udc_poll_ms: 1 } }, defaults)).toThrow(
      /gadget\.udc_poll_ms/,
    );
  });

  it('names the key path of a bad value', () => {
    expect(() => buildConfig({ server: { listen: 'nowhere' } }, defaults)).toThrow(
      /server\.listen: expected host:port/,
    );
    expect(() => buildConfig({ auth: { rate_limit: { lock_s: -1 } } }, defaults)).toThrow(
      /auth\.rate_limit\.lock_s/,
    );
    expect(() => buildConfig({ target: 'toaster' }, defaults)).toThrow(/target/);
  });

  it('refuses unknown keys by path', () => {
    expect(() => buildConfig({ server: { lisen: ':1' } }, defaults)).toThrow(
      /unknown key server\.lisen/,
    );
  });

  it('parses host:port forms', () => {
    expect(parseHostPort('127.0.0.1:0')).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseHostPort('[::1]:8443')).toEqual({ host: '::1', port: 8443 });
    expect(parseHostPort(':80')).toEqual({ host: '0.0.0.0', port: 80 });
    expect(parseHostPort('host')).toBeNull();
    expect(parseHostPort('a:99999')).toBeNull();
  });

  it('reads YAML and reports syntax errors with the file name', async () => {
    const dir = await testTempDir('cfg');
    const good = join(dir, 'good.yaml');
    await writeFile(good, 'target: testbed\nserver:\n  tls: false\n');
    expect(await readConfigFile(good)).toEqual({ target: 'testbed', server: { tls: false } });
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'server: [\n');
    await expect(readConfigFile(bad)).rejects.toBeInstanceOf(ConfigError);
    const list = join(dir, 'list.yaml');
    await writeFile(list, '- a\n');
    await expect(readConfigFile(list)).rejects.toThrow(/mapping/);
  });
});

describe('cli', () => {
  it('maps options onto config keys', () => {
    const cli = parseCli([
      '--target',
      'testbed',
      '--data',
      '/d',
      '--listen',
      '127.0.0.1:0',
      '--no-tls',
    ]);
    expect(cli.overrides).toEqual({
      target: 'testbed',
      data_dir: '/d',
      server: { listen: '127.0.0.1:0', tls: false, redirect_listen: null },
    });
  });

  it('refuses unknown options and targets', () => {
    expect(() => parseCli(['--bogus'])).toThrow(CliError);
    expect(() => parseCli(['--target', 'x'])).toThrow(/unknown target/);
  });

  it('lets the command line win over the file', () => {
    const merged = mergeConfig(
      { server: { listen: ':1', tls: true }, target: 'qemu' },
      { server: { tls: false } },
    );
    expect(merged).toEqual({ server: { listen: ':1', tls: false }, target: 'qemu' });
  });
});
