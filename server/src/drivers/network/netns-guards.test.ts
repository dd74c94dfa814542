/**
 * What reaches `ip`, udhcpc and resolv.conf from the netns driver: only dotted quads and one
 * host label, whatever the driver is handed (no namespaces needed: the checks come first).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SILENT_LOGGER } from '../../log';
import type { EthernetSettings } from './types';
import { DEFAULT_HOSTNAME, NetnsNetwork, NetworkApplyError } from './netns';
import { settingsProblem } from '../../platform/netns/parse';
import type { CommandRunner } from '../../process/run';

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-netns-guard-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const STATIC: EthernetSettings = {
  mode: 'static',
  ip_address: '192.168.8.50',
  netmask: '255.255.255.0',
  gateway: '192.168.8.1',
  dns_servers: ['192.168.8.1'],
};

/** Values that would read as an `ip` option, a second argument or a resolv.conf line. */
const BAD = ['-6', '192.168.8.50 dev lo', '192.168.8.1\nnameserver 6.6.6.6', '', '01.2.3.4'];

function driver(calls: string[][]): NetnsNetwork {
  const runner: CommandRunner = async (file, args) => {
    calls.push([file, ...args]);
    return { stdout: '', stderr: '' };
  };
  return new NetnsNetwork({
    dataDir: dir,
    root: join(dir, 'root'),
    log: SILENT_LOGGER,
    eager: false,
    runner,
  });
}

describe('netns argument guards', () => {
  it('settingsProblem accepts dotted quads only', () => {
    expect(settingsProblem(STATIC)).toBeNull();
    expect(settingsProblem({ mode: 'dhcp', dns_servers: null })).toBeNull();
    for (const bad of BAD) {
      expect(settingsProblem({ ...STATIC, ip_address: bad }), bad).toMatch(/^ip_address/);
      expect(settingsProblem({ ...STATIC, dns_servers: [bad] }), bad).toMatch(/^dns_servers/);
      if (bad !== '') expect(settingsProblem({ ...STATIC, gateway: bad }), bad).toMatch(/^gateway/);
      expect(settingsProblem({ ...STATIC, netmask: bad }), bad).toMatch(/^netmask/);
    }
    expect(settingsProblem({ mode: '--help', dns_servers: null })).toMatch(/^mode/);
  });

  it('refuses such settings before any command runs', async () => {
    const calls: string[][] = [];
    const d = driver(calls);
    for (const bad of BAD) {
      await expect(d.apply({ ...STATIC, ip_address: bad })).rejects.toBeInstanceOf(
        NetworkApplyError,
      );
      await expect(d.apply({ mode: 'dhcp', dns_servers: [bad] })).rejects.toBeInstanceOf(
        NetworkApplyError,
      );
    }
    expect(calls).toEqual([]);
  });

  it('sends udhcpc only a host label: a bad name is refused, a bad file reads as the default', async () => {
    const d = driver([]);
    for (const bad of ['-s/tmp/x', 'a b', 'kvm\nx', '']) {
      await expect(d.setHostname(bad)).rejects.toBeInstanceOf(NetworkApplyError);
    }
    await mkdir(join(dir, 'root', 'etc'), { recursive: true });
    await writeFile(join(dir, 'root', 'etc', 'hostname'), '-s /tmp/evil\nsecond line\n');
    expect(await d.hostname()).toBe(DEFAULT_HOSTNAME);
    await writeFile(join(dir, 'root', 'etc', 'hostname'), 'lab-kvm\n');
    expect(await d.hostname()).toBe('lab-kvm');
  });
});
