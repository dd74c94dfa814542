/**
 * A test "Internet" beyond the developer targets' LAN, with a WireGuard peer on it (issue 27;
 * used by the WireGuard namespace tests, `npm run bench -- apps` and the apps e2e). Not shipped.
 *
 * - `kvmwan-<h>` is a third namespace joined to the LAN namespace (`kvmlan-<h>`, the home
 *   router) by a veth: `wan0` = 198.51.100.1/24 on the router, `eth0` = 198.51.100.2/24 in the
 *   peer (TEST-NET-2, never routed on the real Internet);
 * - the router forwards (ip_forward in its namespace) and masquerades 192.168.8.0/24 out of
 *   `wan0` with nft, as a home router's NAT does;
 * - a wireguard-go peer runs in `kvmwan-<h>` on `wgp<h>` (unique on this computer: the UAPI
 *   socket path is shared by all namespaces), 10.77.0.1/24, listening on 51820;
 * - the peer has NO route to 192.168.8.0/24: it reaches the device only through the tunnel.
 *
 * `close()` kills the peer, deletes the namespace (the router's `wan0` goes with its veth) and
 * the socket; call it in afterEach/afterAll, also on failure.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '../../process/run';
import { waitForExit } from '../../process/supervisor';
import { deleteNamespaces, type NetnsNames } from './namespaces';

export const WAN = {
  router: '198.51.100.1',
  peer: '198.51.100.2',
  prefix: 24,
  port: 51820,
  /** The tunnel's network: the peer and the device. */
  tunnelPeer: '10.77.0.1',
  tunnelDevice: '10.77.0.2',
  tunnelPrefix: 24,
} as const;

export interface WanPeer {
  /** The peer's namespace (`kvmwan-<h>`). */
  namespace: string;
  /** The peer's WireGuard interface. */
  ifname: string;
  peerPublicKey: string;
  devicePublicKey: string;
  /** The device's wg-quick configuration (its private key inside). */
  deviceConfig: (extra?: { keepalive?: number | null; allowedIps?: string }) => string;
  /** The peer's own, as wg-quick text (for a reader, never applied by the device). */
  peerConfig: string;
  /** Both key pairs: a peer made again with them (after a server restart) is the same peer. */
  keys: WanKeys;
  close(): Promise<void>;
}

export interface WanKeys {
  device: { priv: string; pub: string };
  peer: { priv: string; pub: string };
}

const hashOf = (names: NetnsNames): string => names.dev.replace(/^kvmdev-/, '');

async function run(args: readonly string[], input?: string): Promise<string> {
  return (await runCommand(args[0] as string, args.slice(1), { timeoutMs: 10_000, input })).stdout;
}

async function genkey(): Promise<{ priv: string; pub: string }> {
  const priv = (await run(['wg', 'genkey'])).trim();
  const pub = (await run(['wg', 'pubkey'], `${priv}\n`)).trim();
  return { priv, pub };
}

/** Every process inside `ns` killed, then the namespace deleted; quiet when it is not there (or a step fails). */
const deleteNamespace = (ns: string): Promise<void> =>
  deleteNamespaces(
    (file, args) =>
      runCommand(file, args, { timeoutMs: 10_000 }).catch(() => ({ stdout: '', stderr: '' })),
    [ns],
  );

/**
 * Builds the peer namespace beside the running LAN namespace of `names` (the device network
 * must be up) and starts the WireGuard peer.
 */
export async function startWanPeer(names: NetnsNames, keys?: WanKeys): Promise<WanPeer> {
  const h = hashOf(names);
  const ns = `kvmwan-${h}`;
  const ifname = `wgp${h}`;
  const socket = `/var/run/wireguard/${ifname}.sock`;
  let peerProc: ChildProcess | null = null;
  const close = async (): Promise<void> => {
    const pid = peerProc?.pid;
    if (pid && peerProc?.exitCode === null) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        peerProc?.kill('SIGKILL');
      }
      await waitForExit(pid, 3000);
    }
    await deleteNamespace(ns);
    await rm(socket, { force: true });
  };
  try {
    await deleteNamespace(ns);
    await rm(socket, { force: true });
    await run(['ip', 'netns', 'add', ns]);
    // prettier-ignore
    await run(['ip', 'link', 'add', 'name', 'wan0', 'netns', names.lan, 'type', 'veth',
      'peer', 'name', 'eth0', 'netns', ns]);
    await run(['ip', '-n', names.lan, 'addr', 'add', `${WAN.router}/${WAN.prefix}`, 'dev', 'wan0']);
    await run(['ip', '-n', ns, 'addr', 'add', `${WAN.peer}/${WAN.prefix}`, 'dev', 'eth0']);
    for (const [n, i] of [
      [names.lan, 'wan0'],
      [ns, 'lo'],
      [ns, 'eth0'],
    ] as const) {
      await run(['ip', '-n', n, 'link', 'set', i, 'up']);
    }
    await run(['ip', 'netns', 'exec', names.lan, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    const nat = `table ip kvmnat {
  chain post {
    type nat hook postrouting priority 100; policy accept;
    ip saddr 192.168.8.0/24 oifname "wan0" masquerade
  }
}
`;
    await run(['ip', 'netns', 'exec', names.lan, 'nft', '-f', '-'], nat);

    const device = keys?.device ?? (await genkey());
    const peer = keys?.peer ?? (await genkey());
    peerProc = spawn('ip', ['netns', 'exec', ns, 'wireguard-go', '-f', ifname], {
      env: { ...process.env, WG_PROCESS_FOREGROUND: '1' },
      stdio: 'ignore',
      detached: true,
    });
    const deadline = performance.now() + 10_000;
    for (;;) {
      const ok = await stat(socket).then(
        (s) => s.isSocket(),
        () => false,
      );
      if (ok) break;
      if (peerProc.exitCode !== null || performance.now() > deadline) {
        throw new Error('the peer wireguard-go did not start');
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const setconf = `[Interface]\nPrivateKey = ${peer.priv}\nListenPort = ${WAN.port}\n\n[Peer]\nPublicKey = ${device.pub}\nAllowedIPs = ${WAN.tunnelDevice}/32\n`;
    // the key goes through a 0600 file removed at once, never an argv
    const file = join(tmpdir(), `kvm-${ifname}.conf`);
    await writeFile(file, setconf, { mode: 0o600 });
    try {
      await run(['ip', 'netns', 'exec', ns, 'wg', 'setconf', ifname, file]);
    } finally {
      await rm(file, { force: true });
    }
    await run([
      'ip',
      '-n',
      ns,
      'addr',
      'add',
      `${WAN.tunnelPeer}/${WAN.tunnelPrefix}`,
      'dev',
      ifname,
    ]);
    await run(['ip', '-n', ns, 'link', 'set', 'dev', ifname, 'mtu', '1420', 'up']);

    const deviceConfig = (extra: { keepalive?: number | null; allowedIps?: string } = {}) => {
      const keepalive = extra.keepalive === undefined ? 25 : extra.keepalive;
      return [
        '[Interface]',
        `PrivateKey = ${device.priv}`,
        `Address = ${WAN.tunnelDevice}/${WAN.tunnelPrefix}`,
        '',
        '[Peer]',
        `PublicKey = ${peer.pub}`,
        `Endpoint = ${WAN.peer}:${WAN.port}`,
        `AllowedIPs = ${extra.allowedIps ?? `${WAN.tunnelPeer}/32`}`,
        ...(keepalive === null ? [] : [`PersistentKeepalive = ${keepalive}`]),
        '',
      ].join('\n');
    };
    const peerConfig = [
      '[Interface]',
      `PrivateKey = ${peer.priv}`,
      `Address = ${WAN.tunnelPeer}/${WAN.tunnelPrefix}`,
      `ListenPort = ${WAN.port}`,
      '',
      '[Peer]',
      `PublicKey = ${device.pub}`,
      `AllowedIPs = ${WAN.tunnelDevice}/32`,
      '',
    ].join('\n');
    return {
      namespace: ns,
      ifname,
      peerPublicKey: peer.pub,
      devicePublicKey: device.pub,
      deviceConfig,
      peerConfig,
      keys: { device, peer },
      close,
    };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}

/** Whether a TCP connection from `ns` to `address:port` opens (within `timeoutMs`). */
export async function tcpReachable(
  ns: string,
  address: string,
  port: number,
  timeoutMs = 2000,
): Promise<boolean> {
  const js = `const c = require('node:net').connect(${port}, ${JSON.stringify(address)});
c.setTimeout(${timeoutMs}, () => { console.log('timeout'); process.exit(2); });
c.on('connect', () => { console.log('open'); process.exit(0); });
c.on('error', (e) => { console.log(e.code); process.exit(1); });`;
  try {
    const out = await runCommand('ip', ['netns', 'exec', ns, process.execPath, '-e', js], {
      timeoutMs: timeoutMs + 10_000,
    });
    return out.stdout.trim() === 'open';
  } catch {
    return false;
  }
}

/**
 * An HTTPS request from inside `ns` (the device's self-signed certificate accepted): the
 * status code, or the error code (`ENETUNREACH`, `ETIMEDOUT`...) when none came.
 */
export async function httpsFrom(
  ns: string,
  url: string,
  headers: Record<string, string> = {},
  timeoutMs = 5000,
): Promise<{ status: number | null; error: string | null; body: string }> {
  const js = `const https = require('node:https');
const req = https.get(${JSON.stringify(url)}, { rejectUnauthorized: false, headers: ${JSON.stringify(headers)}, timeout: ${timeoutMs} }, (res) => {
  let body = ''; res.setEncoding('utf8'); res.on('data', (d) => { if (body.length < 4096) body += d; });
  res.on('end', () => { console.log(JSON.stringify({ status: res.statusCode, error: null, body })); process.exit(0); });
});
req.on('timeout', () => { console.log(JSON.stringify({ status: null, error: 'ETIMEDOUT', body: '' })); process.exit(0); });
req.on('error', (e) => { console.log(JSON.stringify({ status: null, error: e.code || e.message, body: '' })); process.exit(0); });`;
  const env = { ...process.env };
  delete env['NODE_OPTIONS'];
  const out = await runCommand('ip', ['netns', 'exec', ns, process.execPath, '-e', js], {
    timeoutMs: timeoutMs + 10_000,
    env,
  });
  return JSON.parse(out.stdout.trim().split('\n').pop() ?? '{}') as {
    status: number | null;
    error: string | null;
    body: string;
  };
}
