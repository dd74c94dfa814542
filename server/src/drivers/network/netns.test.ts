/**
 * The netns driver against real namespaces, dnsmasq and udhcpc (root needed). Every test has
 * its own data folder, hence its own namespace names, and disposes in afterEach.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SILENT_LOGGER } from '../../log';
import { findExecutable, readProcArgv } from '../../process/supervisor';
import type { EthernetSettings } from './types';
import { SystemFeatureUnavailableError } from '../types';
import {
  NEEDS_ROOT,
  NETNS_ETC,
  NetnsNetwork,
  NetworkApplyError,
  netnsNames,
  type NetnsNetworkOptions,
} from './netns';
import { runCommand, type CommandRunner } from '../../process/run';
import {
  listNamespaces,
  reachableFromLan,
  resolveInDevice,
  runInLan,
} from '../../platform/netns/test-support';

const missing = ['ip', 'dnsmasq', 'udhcpc', 'getent'].filter((c) => !findExecutable(c));
const skipReason =
  process.getuid?.() !== 0
    ? 'network namespaces need root'
    : missing.length > 0
      ? `${missing.join(', ')} not installed`
      : null;
if (skipReason) console.warn(`netns.test.ts skipped: ${skipReason}`);

const POOL = /^192\.168\.8\.(1\d\d)$/;
const STATIC: EthernetSettings = {
  mode: 'static',
  ip_address: '192.168.8.50',
  netmask: '255.255.255.0',
  gateway: '192.168.8.1',
  dns_servers: null,
};
const DHCP: EthernetSettings = { mode: 'dhcp', dns_servers: null };

describe.skipIf(skipReason !== null)('NetnsNetwork (real namespaces)', () => {
  let dir = '';
  let drivers: NetnsNetwork[] = [];

  function make(opts: Partial<NetnsNetworkOptions> = {}): NetnsNetwork {
    const d = new NetnsNetwork({
      dataDir: dir,
      root: join(dir, 'system-root'),
      log: SILENT_LOGGER,
      eager: false,
      dhcpTimeoutMs: 5000,
      ...opts,
    });
    drivers.push(d);
    return d;
  }

  async function leased(d: NetnsNetwork): Promise<string> {
    await expect.poll(async () => (await d.status()).ip_address, { timeout: 8000 }).toMatch(POOL);
    return (await d.status()).ip_address;
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvm-netns-'));
  });

  afterEach(async () => {
    const names = netnsNames(dir);
    await Promise.allSettled(drivers.map((d) => d.dispose()));
    drivers = [];
    // Also what a test made by hand, whatever happened in it.
    for (const ns of [names.dev, names.lan]) {
      if ((await listNamespaces()).includes(ns)) execFileSync('ip', ['netns', 'del', ns]);
    }
    await rm(join(NETNS_ETC, names.dev), { recursive: true, force: true });
    await rm(join(NETNS_ETC, `.${names.dev}.tmp`), { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  });

  it('holds a DHCP lease from the LAN router: pool address, gateway and DNS .1', async () => {
    const d = make();
    await d.init();
    expect(d.availability()).toEqual({ available: true, reason: null });
    const changes: number[] = [];
    d.onChange(() => changes.push(Date.now()));
    const ip = await leased(d);
    // the address is the kernel's as soon as udhcpc sets it; resolv.conf follows the lease event
    await expect
      .poll(() => d.status(), { timeout: 8000 })
      .toMatchObject({
        interface: 'eth0',
        mac_address: d.names.mac,
        link: 'up',
        mode: 'dhcp',
        ip_address: ip,
        netmask: '255.255.255.0',
        gateway: '192.168.8.1',
        dns_servers: ['192.168.8.1'],
        dns_manual: false,
      });
    await expect.poll(() => changes.length).toBeGreaterThan(0);
    // dnsmasq recorded it with the device's hostname
    const leases = join(dir, 'run', 'netns', 'dnsmasq.leases');
    await expect
      .poll(async () => (await runInLan(d.names, ['cat', leases])).stdout, { timeout: 8000 })
      .toContain(`${ip} glkvm`);
  });

  it('overlapping resolv.conf writes all land, the last one wins, no temp file stays (issue 21)', async () => {
    // At start a lease's write and the saved settings' write overlapped; with one shared temp
    // name the second rename found nothing (ENOENT) and the restore failed.
    const d = make();
    const inner = d as unknown as {
      writeResolv(): Promise<void>;
      applied: EthernetSettings;
    };
    // the temp files are made in this namespace's own folder beside /etc/netns/<dev>
    const tempFiles = async () =>
      (await readdir(join(NETNS_ETC, `.${d.names.dev}.tmp`)).catch(() => [])).filter((n) =>
        n.startsWith('.resolv.conf.tmp'),
      );
    const writes: Promise<void>[] = [];
    for (let i = 1; i <= 20; i++) {
      inner.applied = { mode: 'dhcp', dns_servers: [`10.0.0.${i}`] };
      writes.push(inner.writeResolv());
    }
    const results = await Promise.allSettled(writes);
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    const resolv = join(NETNS_ETC, d.names.dev, 'resolv.conf');
    expect(await readFile(resolv, 'utf8')).toContain('nameserver 10.0.0.20');
    // Only resolv.conf in the namespace's folder (ip netns exec mounts each file there), and
    // no temp file of ours beside it.
    expect(await readdir(join(NETNS_ETC, d.names.dev))).toEqual(['resolv.conf']);
    expect(await tempFiles()).toEqual([]);
  });

  it('clears the temp files a killed write left, at its start and at its teardown', async () => {
    const d = make();
    const tmp = join(NETNS_ETC, `.${d.names.dev}.tmp`);
    // what a server killed in the middle of a resolv.conf write leaves
    await mkdir(tmp, { recursive: true });
    await writeFile(join(tmp, '.resolv.conf.tmp-0badc0de'), 'nameserver 10.9.9.9\n');
    await d.init();
    await leased(d);
    await expect
      .poll(async () => readFile(join(NETNS_ETC, d.names.dev, 'resolv.conf'), 'utf8'), {
        timeout: 8000,
      })
      .toContain('nameserver 192.168.8.1');
    expect(await readdir(tmp).catch(() => [])).toEqual([]);
    await writeFile(join(tmp, '.resolv.conf.tmp-0badc0de'), 'nameserver 10.9.9.9\n');
    await d.dispose();
    expect(existsSync(tmp)).toBe(false);
  });

  it('starts by itself at init when eager', async () => {
    const d = make({ eager: true });
    await d.init();
    await expect.poll(async () => listNamespaces(), { timeout: 5000 }).toContain(d.names.dev);
    await leased(d);
  });

  it('applies a static address that the LAN reaches, then goes back to DHCP', async () => {
    const d = make();
    await d.init();
    await leased(d);

    let t0 = performance.now();
    await d.apply({ ...STATIC, dns_servers: ['192.168.8.1', '9.9.9.9'] });
    const staticMs = performance.now() - t0;
    expect(await d.status()).toMatchObject({
      mode: 'static',
      ip_address: '192.168.8.50',
      netmask: '255.255.255.0',
      gateway: '192.168.8.1',
      dns_servers: ['192.168.8.1', '9.9.9.9'],
      dns_manual: true,
    });
    expect(await reachableFromLan(d.names, '192.168.8.50')).toBe(true);

    t0 = performance.now();
    await d.apply(DHCP);
    const dhcpMs = performance.now() - t0;
    const s = await d.status();
    expect(s.ip_address).toMatch(POOL);
    expect(s).toMatchObject({ mode: 'dhcp', gateway: '192.168.8.1', dns_servers: ['192.168.8.1'] });
    expect(await reachableFromLan(d.names, s.ip_address)).toBe(true);
    console.log(
      `netns figures: static_apply_ms=${Math.round(staticMs)} dhcp_lease_ms=${Math.round(dhcpMs)}`,
    );
  });

  it('static without DNS servers leaves the namespace without any', async () => {
    const d = make();
    await d.init();
    await d.apply(STATIC);
    expect((await d.status()).dns_servers).toEqual([]);
    expect(await resolveInDevice(d.names, 'router.lan')).toBeNull();
  });

  it('answers DNS through dnsmasq: router.lan and the device by its hostname', async () => {
    const d = make();
    await d.init();
    const ip = await leased(d);
    // the address is on eth0 a moment before the lease's resolv.conf is written
    await expect
      .poll(() => resolveInDevice(d.names, 'router.lan'), { timeout: 5000 })
      .toBe('192.168.8.1');
    expect(await resolveInDevice(d.names, 'glkvm.lan')).toBe(ip);

    await d.setHostname('kvm-desk');
    expect(await d.hostname()).toBe('kvm-desk');
    await expect.poll(() => resolveInDevice(d.names, 'kvm-desk.lan')).toBe(ip);
  });

  it('a pulled cable (lan0 down) shows as link down and fires onChange', async () => {
    const d = make();
    await d.init();
    await leased(d);
    let changes = 0;
    d.onChange(() => changes++);
    await runInLan(d.names, ['ip', 'link', 'set', 'lan0', 'down']);
    await expect.poll(async () => (await d.status()).link).toBe('down');
    await expect.poll(() => changes).toBeGreaterThan(0);
    await runInLan(d.names, ['ip', 'link', 'set', 'lan0', 'up']);
    await expect.poll(async () => (await d.status()).link).toBe('up');
  });

  it('a refused gateway leaves the previous static address and says which step failed', async () => {
    const d = make();
    await d.init();
    await d.apply(STATIC);
    const err = await d
      .apply({ ...STATIC, ip_address: '192.168.8.60', gateway: '10.9.9.9' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkApplyError);
    expect((err as Error).message).toMatch(/^route \(ip .*\): .*gateway/i);
    expect(await d.status()).toMatchObject({
      mode: 'static',
      ip_address: '192.168.8.50',
      gateway: '192.168.8.1',
    });
    expect(await reachableFromLan(d.names, '192.168.8.50')).toBe(true);
  });

  it('a failing step on the way from DHCP to static brings the lease back', async () => {
    const failing: CommandRunner = (file, args, t) =>
      args.includes('add') && args.includes('192.168.8.70/24')
        ? Promise.reject(new Error('RTNETLINK answers: injected'))
        : runCommand(file, args, t);
    const d = make({ runner: failing });
    await d.init();
    const ip = await leased(d);
    await expect(d.apply({ ...STATIC, ip_address: '192.168.8.70' })).rejects.toThrow(
      /addr add .*injected/,
    );
    expect(await d.status()).toMatchObject({
      mode: 'dhcp',
      ip_address: ip,
      gateway: '192.168.8.1',
    });
  });

  it("removes a crashed run's namespaces (and what runs inside) at init", async () => {
    const names = netnsNames(dir);
    execFileSync('ip', ['netns', 'add', names.dev]);
    execFileSync('ip', ['netns', 'add', names.lan]);
    const orphan = spawn('ip', ['netns', 'exec', names.lan, 'sleep', '60'], {
      stdio: 'ignore',
    });
    try {
      await expect.poll(async () => (await runInLan(names, ['true']), true)).toBe(true);
      const d = make();
      await d.init();
      expect(await listNamespaces()).not.toContain(names.dev);
      expect(await listNamespaces()).not.toContain(names.lan);
      await expect.poll(() => orphan.exitCode ?? orphan.signalCode).toBe('SIGKILL');
      // and it starts cleanly afterwards
      await leased(d);
    } finally {
      orphan.kill('SIGKILL');
    }
  });

  it('dispose removes both namespaces, /etc/netns/<dev> and the daemons; twice is fine', async () => {
    const d = make();
    await d.init();
    await leased(d);
    const pids = (
      await runInLan(d.names, ['true']).then(() =>
        execFileSync('ip', ['netns', 'pids', d.names.lan], { encoding: 'utf8' }),
      )
    )
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
    expect(pids.length).toBeGreaterThan(0); // dnsmasq
    expect(existsSync(join(NETNS_ETC, d.names.dev, 'resolv.conf'))).toBe(true);
    await d.dispose();
    await d.dispose();
    const listed = await listNamespaces();
    expect(listed).not.toContain(d.names.dev);
    expect(listed).not.toContain(d.names.lan);
    expect(existsSync(join(NETNS_ETC, d.names.dev))).toBe(false);
    expect(existsSync(join(NETNS_ETC, `.${d.names.dev}.tmp`))).toBe(false);
    for (const pid of pids) expect(await readProcArgv(pid)).toBeNull();
    await expect(d.apply(DHCP)).rejects.toThrow(/stopped/);
  });

  it('never starts when lazy and unused; dispose is then a no-op', async () => {
    const d = make();
    await d.init();
    // eth0's address is known without the namespaces (the cloud's identity at every start)
    expect(await d.macAddress()).toBe(d.names.mac);
    expect(d.names.mac).toMatch(/^02:4b(:[0-9a-f]{2}){4}$/);
    expect(await listNamespaces()).not.toContain(d.names.dev);
    await d.dispose();
    expect(await listNamespaces()).not.toContain(d.names.dev);
  });
});

describe('NetnsNetwork without root', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('says why, reads empty and refuses every change, touching nothing', async () => {
    vi.spyOn(process, 'getuid').mockReturnValue(1000);
    const calls: string[] = [];
    const d = new NetnsNetwork({
      dataDir: '/nonexistent/kvm-data',
      root: '/nonexistent/kvm-data/system-root',
      log: SILENT_LOGGER,
      eager: true,
      runner: async (file, args) => {
        calls.push([file, ...args].join(' '));
        return { stdout: '', stderr: '' };
      },
    });
    await d.init();
    expect(d.availability()).toEqual({ available: false, reason: NEEDS_ROOT });
    expect(await d.status()).toMatchObject({ ip_address: '', link: 'down', interface: '' });
    await expect(d.apply(DHCP)).rejects.toBeInstanceOf(SystemFeatureUnavailableError);
    await expect(d.setHostname('x')).rejects.toThrow(NEEDS_ROOT);
    expect(await d.hostname()).toBe('glkvm');
    expect(await d.macAddress()).toBe('');
    await d.dispose();
    expect(calls).toEqual([]);
  });
});
