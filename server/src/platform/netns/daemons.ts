/**
 * The daemons of the developer targets' network, each a Supervisor running inside its
 * namespace through `ip netns exec`: dnsmasq as the LAN's router (DHCP and DNS), udhcpc as the
 * device's DHCP client, and `ip monitor` watching the device's links and addresses. The network
 * driver owns them (starts, stops, listens); this file only says how each one is run.
 */
import { basename } from 'node:path';
import { prefixToNetmask } from '@kvm/protocol';
import type { Logger } from '../../log';
import { Supervisor } from '../../process/supervisor';
import { DEV_IFACE, LAN, LAN_IFACE } from './namespaces';

const DNSMASQ_READY_MS = 3000;

export interface DnsmasqFiles {
  leases: string;
  pidfile: string;
}

/** dnsmasq in the LAN namespace: the router at 192.168.8.1 (GL's default LAN). */
export function dnsmasqSupervisor(lanNs: string, files: DnsmasqFiles, log: Logger): Supervisor {
  const sup = new Supervisor({
    name: 'dnsmasq',
    command: 'ip',
    // prettier-ignore
    args: [
      'netns', 'exec', lanNs, 'dnsmasq',
      '--keep-in-foreground', '--log-facility=-', '--conf-file=/dev/null', '--pid-file=',
      '--bind-interfaces', `--interface=${LAN_IFACE}`, '--no-resolv', '--no-hosts',
      `--dhcp-range=${LAN.first},${LAN.last},${prefixToNetmask(LAN.prefix)},12h`,
      `--dhcp-option=option:router,${LAN.router}`,
      `--dhcp-option=option:dns-server,${LAN.router}`,
      `--dhcp-leasefile=${files.leases}`, '--dhcp-authoritative',
      // Its ping of a new address before offering it blocks for 3 s; nobody else is here.
      '--no-ping',
      // DHCP clients' names register as <name>.lan; the router answers as router.lan.
      `--domain=${LAN.domain}`, `--local=/${LAN.domain}/`,
      `--host-record=${LAN.routerName},router,${LAN.router}`,
    ],
    pidfile: files.pidfile,
    stopTimeoutMs: 2000,
    backoff: { initialMs: 500, maxMs: 5000 },
    isStale: (argv) => argv.includes(`--dhcp-leasefile=${files.leases}`),
  });
  sup.on('output', (line) => log.debug({ netns: lanNs, line }, 'dnsmasq'));
  sup.on('exited', (info) => {
    if (!info.expected) log.warn({ code: info.code }, 'netns: dnsmasq exited');
  });
  return sup;
}

/**
 * Starts dnsmasq and waits until it says its DHCP sockets are bound (at most 3 s); throws with
 * its last words if it is not running then.
 */
export async function startDnsmasq(sup: Supervisor): Promise<void> {
  let ready: () => void = () => undefined;
  const readyP = new Promise<void>((r) => (ready = r));
  const onLine = (line: string): void => {
    if (/DHCP, sockets bound/.test(line)) ready();
  };
  sup.on('output', onLine);
  try {
    await sup.ensureStarted();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([readyP, new Promise((r) => (timer = setTimeout(r, DNSMASQ_READY_MS)))]);
    clearTimeout(timer);
  } finally {
    sup.off('output', onLine);
  }
  if (sup.state !== 'running') {
    throw new Error(`dnsmasq: ${sup.recentOutput().slice(-3).join(' | ')}`);
  }
}

/** `ip monitor` in the device's namespace: link and address changes made by anyone. */
export function ipMonitorSupervisor(devNs: string, pidfile: string): Supervisor {
  return new Supervisor({
    name: 'ip-monitor',
    command: 'ip',
    args: ['-n', devNs, 'monitor', 'link', 'address'],
    pidfile,
    stopTimeoutMs: 1000,
    isStale: (argv) => argv.includes('monitor') && argv.includes(devNs),
  });
}

export interface UdhcpcOptions {
  /** The lease script (lease-script.ts), which prints each event as one line. */
  script: string;
  pidfile: string;
  /** Sent to the DHCP server (`-x hostname:`). */
  hostname: string;
  /** The address to ask for (the one held before a restart). */
  requestIp?: string;
}

/** udhcpc on the device's `eth0`. */
export function udhcpcSupervisor(devNs: string, o: UdhcpcOptions): Supervisor {
  // -T 1: a discover lost while the veth's carrier comes up costs 1 s, not 3.
  // prettier-ignore
  const args = [
    'netns', 'exec', devNs, 'udhcpc', '-f', '-i', DEV_IFACE, '-s', o.script,
    '-x', `hostname:${o.hostname}`, '-T', '1', '-t', '5', '-A', '2',
  ];
  if (o.requestIp) args.push('-r', o.requestIp);
  return new Supervisor({
    name: 'udhcpc',
    command: 'ip',
    args,
    pidfile: o.pidfile,
    stopTimeoutMs: 2000,
    backoff: { initialMs: 500, maxMs: 5000 },
    isStale: (argv) => basename(argv[0] ?? '') === 'udhcpc' && argv.includes(o.script),
  });
}
