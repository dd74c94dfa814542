/**
 * The developer targets' two network namespaces (docs/system.md "Network namespaces"): the
 * device's `eth0`, joined by a veth pair to `lan0` in the "LAN" namespace where dnsmasq plays
 * the home router. Names come from a hash of the data folder, so servers and parallel tests
 * never collide and a restarted server finds (and removes) what a crashed one left
 * (`removeNamespaces`).
 */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import type { CommandResult } from '../../process/run';
import { waitForExit } from '../../process/supervisor';

/** The LAN side: GL's default LAN, dnsmasq's address and DHCP pool. */
export const LAN = {
  router: '192.168.8.1',
  prefix: 24,
  first: '192.168.8.100',
  last: '192.168.8.199',
  domain: 'lan',
  routerName: 'router.lan',
} as const;

export const DEV_IFACE = 'eth0';
export const LAN_IFACE = 'lan0';
/** Where `ip netns exec NS` finds the files it bind-mounts over /etc (iproute2). */
export const NETNS_ETC = '/etc/netns';

export interface NetnsNames {
  /** The device's namespace (`eth0`). */
  dev: string;
  /** The router's namespace (`lan0`, dnsmasq). */
  lan: string;
  /** A stable, locally administered MAC for `eth0`: the same lease after a restart. */
  mac: string;
}

export function netnsNames(dataDir: string): NetnsNames {
  const h = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 8);
  const mac = `02:4b:${h.match(/../g)?.join(':') ?? '00:00:00:00'}`;
  return { dev: `kvmdev-${h}`, lan: `kvmlan-${h}`, mac };
}

/**
 * Deletes the namespaces in `names` that exist, killing whatever runs inside first (a
 * namespace lives on while a process is in it). Idempotent.
 */
export async function removeNamespaces(
  run: (file: string, args: readonly string[]) => Promise<CommandResult>,
  names: Pick<NetnsNames, 'dev' | 'lan'>,
): Promise<void> {
  await deleteNamespaces(run, [names.dev, names.lan]);
}

/** Deletes each of `namespaces` that exists, killing whatever runs inside first. Idempotent. */
export async function deleteNamespaces(
  run: (file: string, args: readonly string[]) => Promise<CommandResult>,
  namespaces: readonly string[],
): Promise<void> {
  const { stdout } = await run('ip', ['netns', 'list']);
  const listed = new Set(stdout.split('\n').map((l) => l.trim().split(/\s+/)[0]));
  for (const ns of namespaces) {
    if (!listed.has(ns)) continue;
    const pids = (await run('ip', ['netns', 'pids', ns])).stdout
      .split(/\s+/)
      .map(Number)
      .filter((p) => Number.isInteger(p) && p > 1 && p !== process.pid);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const pid of pids) await waitForExit(pid, 3000);
    await run('ip', ['netns', 'del', ns]);
  }
}
