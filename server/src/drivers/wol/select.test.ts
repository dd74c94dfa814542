import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SILENT_LOGGER } from '../../log';
import { NetnsNetwork } from '../network/netns';
import { NetnsWolSender } from './netns';
import { WolBusyError } from './types';
import type { CommandRunner } from '../../process/run';
import { NmcliNetwork } from '../network/nmcli';
import { DisabledNetwork } from '../network/disabled';
import type { EthernetStatus } from '../network/types';
import { wolSender } from './select';
import { subnetBroadcast } from './host';
import { WolUnavailableError } from './types';

let dir = '';
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = '';
});

const packet = new Uint8Array(102).fill(0xff);

describe('wolSender', () => {
  it("follows the network driver: the namespace's, the host's for NetworkManager, none when unmanaged", async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvm-wol-select-'));
    const netns = new NetnsNetwork({ dataDir: dir, root: dir, log: SILENT_LOGGER, eager: false });
    expect(wolSender({ network: 'device', interface: null }, netns).name).toBe('netns');
    expect(wolSender({ network: 'host', interface: null }, netns).name).toBe('host');
    const nmcli = new NmcliNetwork({ monitor: null });
    expect(wolSender({ network: 'device', interface: null }, nmcli).name).toBe('host');
    const off = wolSender(
      { network: 'device', interface: null },
      new DisabledNetwork('Network management is disabled in the configuration'),
    );
    expect(off.name).toBe('none');
    const err = await off.send(packet, '255.255.255.255', 9).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WolUnavailableError);
    expect((err as Error).message).toMatch(/disabled in the configuration.*wol\.network: host/);
  });

  it('computes a subnet broadcast', () => {
    expect(subnetBroadcast('192.168.8.116', '255.255.255.0')).toBe('192.168.8.255');
    expect(subnetBroadcast('10.1.2.3', '255.255.240.0')).toBe('10.1.15.255');
  });
});

describe('NetnsWolSender', () => {
  /** A device network holding `ip_address` in /24, and a runner that records and can hold. */
  function rig(ip: string, hold?: Promise<void>) {
    const calls: string[][] = [];
    const network = {
      names: { dev: 'kvmdev-test', lan: 'kvmlan-test', mac: '02:4b:00:00:00:00' },
      availability: () => ({ available: true, reason: null }),
      status: async (): Promise<Partial<EthernetStatus>> => ({
        ip_address: ip,
        netmask: ip ? '255.255.255.0' : '',
      }),
    } as unknown as NetnsNetwork;
    const run: CommandRunner = async (file, args) => {
      calls.push([file, ...args]);
      await hold;
      return { stdout: '', stderr: '' };
    };
    return { sender: new NetnsWolSender(network, run), calls };
  }

  it('sends from inside the device namespace to its broadcast: values as arguments only', async () => {
    const { sender, calls } = rig('192.168.8.116');
    expect(await sender.send(packet, '255.255.255.255', 9)).toEqual({ address: '192.168.8.255' });
    const argv = calls[0]!;
    expect(argv.slice(0, 4)).toEqual(['ip', 'netns', 'exec', 'kvmdev-test']);
    expect(argv[4]).toBe(process.execPath);
    expect(argv[5]).toBe('-e');
    expect(argv.slice(7)).toEqual(['192.168.8.255', '9', 'ff'.repeat(102)]);
    // an address of the configuration goes as it is
    expect(await sender.send(packet, '192.168.8.77', 7)).toEqual({ address: '192.168.8.77' });
  });

  it('says when the device has no address yet, and bounds the sends waiting', async () => {
    await expect(rig('').sender.send(packet, '255.255.255.255', 9)).rejects.toThrow(
      /no IPv4 address yet/,
    );
    let release: () => void = () => undefined;
    const { sender } = rig('192.168.8.116', new Promise<void>((r) => (release = r)));
    const sends = Array.from({ length: 4 }, () => sender.send(packet, '255.255.255.255', 9));
    await expect(sender.send(packet, '255.255.255.255', 9)).rejects.toBeInstanceOf(WolBusyError);
    release();
    await Promise.all(sends);
    // the queue drained: a new send is taken again
    await expect(sender.send(packet, '255.255.255.255', 9)).resolves.toBeDefined();
  });
});
