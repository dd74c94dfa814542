import { mkdtemp, readFile, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BadRequestError } from '../../errors';
import type { Logger } from '../../log';
import type { EthernetSettings, EthernetStatus, NetworkDriver } from '../../drivers/network/types';
import { parseHostname, parseNetworkQuery } from './network-input';
import { NetworkService } from './network-service';
import { NetworkChangeNotFoundError, NetworkChangePendingError } from './safe-change';
import { STATIC_QUERY } from './test-support';

/** A driver that holds what it was given, as a real interface would; `failNext` fails an apply. */
class FakeNetwork implements NetworkDriver {
  readonly name = 'fake';
  applied: EthernetSettings[] = [];
  failNext: Error | null = null;
  host = 'kvm';
  state: EthernetStatus = {
    interface: 'eth0',
    mac_address: '02:00:00:00:00:01',
    link: 'up',
    mode: 'dhcp',
    ip_address: '10.0.0.50',
    netmask: '255.255.255.0',
    gateway: '10.0.0.1',
    dns_servers: ['10.0.0.1'],
    dns_manual: false,
  };
  availability() {
    return { available: true, reason: null };
  }
  async status() {
    return { ...this.state };
  }
  async macAddress() {
    return this.state.mac_address;
  }
  async apply(s: EthernetSettings) {
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = null;
      throw err;
    }
    this.applied.push(s);
    this.state =
      s.mode === 'static'
        ? {
            ...this.state,
            mode: 'static',
            ip_address: s.ip_address!,
            netmask: s.netmask!,
            gateway: s.gateway!,
            dns_servers: s.dns_servers ?? [],
            dns_manual: s.dns_servers !== null,
          }
        : {
            ...this.state,
            mode: 'dhcp',
            ip_address: '10.0.0.50',
            netmask: '255.255.255.0',
            gateway: '10.0.0.1',
            dns_servers: s.dns_servers ?? ['10.0.0.1'],
            dns_manual: s.dns_servers !== null,
          };
  }
  async hostname() {
    return this.host;
  }
  async setHostname(name: string) {
    this.host = name;
  }
  onChange() {
    return () => undefined;
  }
  async init() {}
  async dispose() {}
}

function recorder(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const put = (_o: object, msg?: string) => void lines.push(msg ?? '');
  return { lines, info: put, warn: put, error: put, debug: put };
}

const origin = { protocol: 'https', port: 443 };

let dataDir: string;
let services: NetworkService[] = [];
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'kvm-net-'));
});
afterEach(async () => {
  vi.useRealTimers();
  for (const s of services) s.dispose();
  services = [];
  await rm(dataDir, { recursive: true, force: true });
});

function service(driver: NetworkDriver, log = recorder(), timeoutS = 60) {
  const s = new NetworkService(driver, { dataDir, confirmTimeoutS: timeoutS, log });
  services.push(s);
  return s;
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );
const savedPath = () => join(dataDir, 'system', 'network.json');
const pendingPath = () => join(dataDir, 'system', 'network.pending.json');

describe('NetworkService', () => {
  it('answers GL config fields and ours from the driver', async () => {
    const s = service(new FakeNetwork());
    const { config } = await s.config();
    expect(config).toMatchObject({
      is_dhcp: true,
      ip_address: '10.0.0.50',
      interface: 'eth0',
      state: 'online',
      protocol: 'dhcp',
      dns_server1: '10.0.0.1',
      dns_server2: '',
      hostname: 'kvm',
      available: true,
      driver: 'fake',
      pending: null,
    });
  });

  it('DNS-only change: applied and saved at once, no pending', async () => {
    const driver = new FakeNetwork();
    const s = service(driver);
    const result = await s.set(parseNetworkQuery({ mode: 'dhcp', dns_servers: '9.9.9.9' }), origin);
    expect(result).toEqual({ success: true, pending: null });
    expect(driver.applied).toEqual([{ mode: 'dhcp', dns_servers: ['9.9.9.9'] }]);
    expect(JSON.parse(await readFile(savedPath(), 'utf8')).settings.dns_servers).toEqual([
      '9.9.9.9',
    ]);
    expect(await exists(pendingPath())).toBe(false);
  });

  it('confirm keeps a risky change and saves it only then', async () => {
    const driver = new FakeNetwork();
    const s = service(driver);
    const { pending } = await s.set(parseNetworkQuery(STATIC_QUERY), origin);
    expect(pending).toMatchObject({
      kind: 'ethernet',
      timeout_s: 60,
      new_address: 'https://10.0.0.77/',
      previous_address: 'https://10.0.0.50/',
    });
    expect(driver.state.ip_address).toBe('10.0.0.77');
    expect(await exists(pendingPath())).toBe(true);
    expect(await exists(savedPath())).toBe(false);
    expect((await s.config()).config.pending?.id).toBe(pending!.id);
    await expect(s.safe.confirm('nope')).rejects.toBeInstanceOf(NetworkChangeNotFoundError);
    await s.safe.confirm(pending!.id);
    expect(await exists(pendingPath())).toBe(false);
    expect(JSON.parse(await readFile(savedPath(), 'utf8')).settings.ip_address).toBe('10.0.0.77');
    expect((await s.config()).config.pending).toBeNull();
  });

  it('reverts by itself when not confirmed within 60 s, and logs it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const driver = new FakeNetwork();
    const log = recorder();
    const s = service(driver, log);
    const { pending } = await s.set(parseNetworkQuery(STATIC_QUERY), origin);
    expect(pending!.expires_at).toBe(Date.now() + 60_000);
    await vi.advanceTimersByTimeAsync(59_000);
    expect(driver.state.ip_address).toBe('10.0.0.77');
    await vi.advanceTimersByTimeAsync(1_000);
    vi.useRealTimers();
    await vi.waitFor(() => expect(driver.state.mode).toBe('dhcp'));
    expect(driver.applied.at(-1)).toEqual({ mode: 'dhcp', dns_servers: null });
    await vi.waitFor(async () => expect(await exists(pendingPath())).toBe(false));
    expect(await exists(savedPath())).toBe(false);
    expect(
      log.lines.some((l) =>
        l.includes('not confirmed within 60 s: previous settings applied again'),
      ),
    ).toBe(true);
    expect(s.safe.pending()).toBeNull();
  });

  it('revert_network_config reverts at once', async () => {
    const driver = new FakeNetwork();
    const s = service(driver);
    const { pending } = await s.set(parseNetworkQuery(STATIC_QUERY), origin);
    await s.safe.revert(pending!.id);
    expect(driver.state.ip_address).toBe('10.0.0.50');
    expect(s.safe.pending()).toBeNull();
    expect(await exists(pendingPath())).toBe(false);
  });

  it('a request arriving on the new address confirms implicitly', async () => {
    const driver = new FakeNetwork();
    const s = service(driver);
    await s.set(parseNetworkQuery(STATIC_QUERY), origin);
    s.safe.noteLocalAddress('::ffff:10.0.0.50');
    expect(s.safe.pending()).not.toBeNull();
    s.safe.noteLocalAddress('::ffff:10.0.0.77');
    await vi.waitFor(async () => expect(await exists(savedPath())).toBe(true));
    expect(s.safe.pending()).toBeNull();
  });

  it('answers 409 while a change is pending', async () => {
    const s = service(new FakeNetwork());
    await s.set(parseNetworkQuery(STATIC_QUERY), origin);
    await expect(
      s.set(parseNetworkQuery({ ...STATIC_QUERY, ip_address: '10.0.0.78' }), origin),
    ).rejects.toBeInstanceOf(NetworkChangePendingError);
    await expect(
      s.set(parseNetworkQuery({ ...STATIC_QUERY, dns_servers: '' }), origin),
    ).rejects.toMatchObject({
      status: 409,
    });
  });

  it('a failing driver leaves the previous settings and answers its error', async () => {
    const driver = new FakeNetwork();
    const s = service(driver);
    driver.failNext = new BadRequestError('ip addr add failed: RTNETLINK answers: File exists');
    await expect(s.set(parseNetworkQuery(STATIC_QUERY), origin)).rejects.toThrow('RTNETLINK');
    expect(driver.state.mode).toBe('dhcp');
    expect(s.safe.pending()).toBeNull();
    expect(await exists(pendingPath())).toBe(false);
    expect(await exists(savedPath())).toBe(false);
    // The next change is not blocked.
    expect(
      (await s.set(parseNetworkQuery({ mode: 'dhcp', dns_servers: '1.1.1.1' }), origin)).pending,
    ).toBeNull();
  });

  it('a restart inside the window applies the previous settings and deletes the pending file', async () => {
    const driver = new FakeNetwork();
    const first = service(driver);
    await first.set(parseNetworkQuery({ mode: 'dhcp', dns_servers: '9.9.9.9' }), origin);
    await first.set(parseNetworkQuery(STATIC_QUERY), origin);
    first.dispose(); // the process dies: the timer is gone, the pending file stays
    expect(await exists(pendingPath())).toBe(true);
    const log = recorder();
    const second = service(driver, log);
    await second.start();
    expect(driver.state.mode).toBe('dhcp');
    expect(driver.applied.at(-1)).toEqual({ mode: 'dhcp', dns_servers: ['9.9.9.9'] });
    expect(await exists(pendingPath())).toBe(false);
    expect(log.lines.some((l) => l.includes('not confirmed before the restart'))).toBe(true);
  });

  it('a restart with no saved file but a pending one applies what the change recorded as previous', async () => {
    const driver = new FakeNetwork();
    const first = service(driver);
    await first.set(parseNetworkQuery(STATIC_QUERY), origin);
    first.dispose();
    const second = service(driver);
    await second.start();
    expect(driver.state.mode).toBe('dhcp');
    expect(await exists(pendingPath())).toBe(false);
  });

  it('start applies the saved settings only when the file exists', async () => {
    const driver = new FakeNetwork();
    await service(driver).start();
    expect(driver.applied).toEqual([]);
    await mkdir(join(dataDir, 'system'), { recursive: true });
    await writeFile(
      savedPath(),
      JSON.stringify({ settings: { mode: 'dhcp', dns_servers: ['1.1.1.1'] } }),
    );
    await service(driver).start();
    expect(driver.applied).toEqual([{ mode: 'dhcp', dns_servers: ['1.1.1.1'] }]);
  });

  it('a start whose restore fails says why in startProblem (the launcher reads it, issue 21)', async () => {
    const driver = new FakeNetwork();
    await mkdir(join(dataDir, 'system'), { recursive: true });
    await writeFile(
      savedPath(),
      JSON.stringify({ settings: { mode: 'dhcp', dns_servers: ['1.1.1.1'] } }),
    );
    const ok = service(driver);
    await ok.start();
    expect(ok.startProblem).toBeNull();
    driver.failNext = new Error("ENOENT: no such file or directory, rename '/etc/netns/x'");
    const failed = service(driver);
    await failed.start();
    expect(failed.startProblem).toBe(
      "the saved network settings could not be applied: ENOENT: no such file or directory, rename '/etc/netns/x'",
    );
    // A pending change whose revert fails at the restart is a failed restore too.
    await failed.set(parseNetworkQuery(STATIC_QUERY), origin);
    failed.dispose();
    // (no saved settings to apply after it: the revert was the only try)
    await rm(savedPath());
    driver.failNext = new Error('addr add failed');
    const reverted = service(driver);
    await reverted.start();
    expect(reverted.startProblem).toBe(
      'the network settings could not be restored: addr add failed',
    );
  });

  it('host name: handed to the driver, answered as the driver has it', async () => {
    const driver = new FakeNetwork();
    const s = service(driver);
    expect(await s.setHostname(parseHostname({ hostname: 'desk-kvm' }))).toEqual({
      success: true,
      hostname: 'desk-kvm',
    });
    expect(driver.host).toBe('desk-kvm');
  });
});
