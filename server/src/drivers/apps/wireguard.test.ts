/** The WireGuard driver's pure parts and a hung tool (fakes; the tunnel is in wireguard.netns.test.ts). */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseWgQuick } from '@kvm/protocol/wireguard';
import { afterEach, describe, expect, it } from 'vitest';
import { SILENT_LOGGER } from '../../log';
import { CommandError, type CommandRunner } from '../../process/run';
import { handshakeState, parseWgDump, wgInterfaceName, WireguardDriver } from './wireguard';

const KEY_A = 'yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=';
const KEY_B = 'xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=';
const KEY_C = 'TrMvSoP4jYQlY6RIzBgbssQqY3vxI2Pi+y71lOWWXX0=';

const DUMP = [
  `${KEY_A}\t${KEY_B}\t51820\toff`,
  `${KEY_C}\t(none)\t198.51.100.2:51820\t10.77.0.1/32,fd00::1/128\t1700000000\t1234\t5678\t25`,
  `${KEY_B}\t${KEY_A}\t(none)\t(none)\t0\t0\t0\toff`,
  '',
].join('\n');

describe('wireguard driver parts', () => {
  it('reads wg show dump without keeping the secret keys', () => {
    const d = parseWgDump(DUMP);
    expect(d.publicKey).toBe(KEY_B);
    expect(d.listenPort).toBe(51820);
    expect(d.peers).toEqual([
      {
        public_key: KEY_C,
        endpoint: '198.51.100.2:51820',
        allowed_ips: ['10.77.0.1/32', 'fd00::1/128'],
        latest_handshake: 1700000000,
        rx_bytes: 1234,
        tx_bytes: 5678,
        persistent_keepalive: 25,
      },
      {
        public_key: KEY_B,
        endpoint: null,
        allowed_ips: [],
        latest_handshake: 0,
        rx_bytes: 0,
        tx_bytes: 0,
        persistent_keepalive: null,
      },
    ]);
    // the interface's private key and the preshared key are never in what is kept
    expect(JSON.stringify(d)).not.toContain(KEY_A);
    expect(() => parseWgDump('garbage')).toThrow(/no interface line/);
    expect(() => parseWgDump(`${KEY_A}\t${KEY_B}\t1\toff\nshort\tline`)).toThrow(/too few/);
  });

  it('says connected, connecting or unreachable from the handshakes', () => {
    const peer = (t: number) => ({ ...parseWgDump(DUMP).peers[0]!, latest_handshake: t });
    expect(handshakeState([peer(0)], 1000)).toBe('connecting');
    expect(handshakeState([peer(900)], 1000)).toBe('connected');
    expect(handshakeState([peer(500)], 1000)).toBe('unreachable');
    expect(handshakeState([peer(500), peer(990)], 1000)).toBe('connected');
  });

  it('names the interface uniquely per data folder, within 15 characters', () => {
    const a = wgInterfaceName('/data/a/apps');
    expect(a).toMatch(/^wgk[0-9a-f]{8}$/);
    expect(a.length).toBeLessThanOrEqual(15);
    expect(wgInterfaceName('/data/b/apps')).not.toBe(a);
  });
});

describe('the driver over a fake runner', () => {
  let dir = '';
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A driver in a new folder whose every command is `runner`'s. */
  async function unitDriver(
    runner: CommandRunner,
    namespace: string | null,
  ): Promise<WireguardDriver> {
    dir = await mkdtemp(join(tmpdir(), 'kvm-wg-unit-'));
    const driver = new WireguardDriver(
      {
        namespace,
        unavailable: () => null,
        ready: async () => undefined,
        dataDir: join(dir, 'apps'),
        runDir: join(dir, 'run', 'apps'),
        log: SILENT_LOGGER,
        runner,
      },
      { wireguardGo: 'wireguard-go', wg: 'wg', commandTimeoutMs: 700, memoryLimitBytes: null },
    );
    await driver.init();
    return driver;
  }

  it('a hung wg is killed by the runner timeout and the change fails with a clear error, nothing saved', async () => {
    const calls: string[][] = [];
    const driver = await unitDriver(async (file, args, opts) => {
      calls.push([file, ...args]);
      throw new CommandError(file, args, { timedOut: true, timeoutMs: opts?.timeoutMs });
    }, null);
    const text = `[Interface]\nPrivateKey = ${KEY_A}\nAddress = 10.77.0.2/24\n\n[Peer]\nPublicKey = ${KEY_C}\nAllowedIPs = 10.77.0.0/24\n`;
    await expect(driver.setConfig(text, parseWgQuick(text))).rejects.toThrow(
      'wg pubkey: timed out after 700 ms',
    );
    // the key went on stdin, never in an argv
    expect(calls.flat().join(' ')).not.toContain(KEY_A);
    expect(driver.configured).toBe(false);
    expect(driver.publicConfig()).toBeNull();
    await driver.dispose();
  });

  it('a tunnel never started stops without a command (every server close ran about ten)', async () => {
    const calls: string[][] = [];
    const driver = await unitDriver(async (file, args) => {
      calls.push([file, ...args]);
      return { stdout: '', stderr: '' };
    }, 'kvmdev-test');
    await driver.dispose();
    expect(calls).toEqual([]);
  });
});
