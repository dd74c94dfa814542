/**
 * The WireGuard app on real namespaces (issue 27, item 3): the device's tunnel to a peer on a
 * test "Internet" behind the LAN's NAT (platform/netns/wan-test-support.ts), the console
 * reachable from the peer only through the tunnel (the console bridge), a hostile
 * configuration that changes nothing, and nothing left behind.
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runCommand } from '../../process/run';
import { findExecutable } from '../../process/supervisor';
import { buildNetnsApp, initAndLogin, login, PASSWORD } from '../../test-helpers';
import { NetnsNetwork } from '../network/netns';
import { listNamespaces, namespaceSkipReason } from '../../platform/netns/test-support';
import {
  httpsFrom,
  startWanPeer,
  WAN,
  type WanKeys,
  type WanPeer,
} from '../../platform/netns/wan-test-support';
import { SILENT_LOGGER } from '../../log';
import { appHost } from './registry';
import { wgInterfaceName, WireguardDriver } from './wireguard';

const skipReason =
  namespaceSkipReason() ??
  (['wireguard-go', 'wg', 'nft'].some((c) => !findExecutable(c))
    ? 'wireguard-go, wg or nft missing'
    : null);

interface Rig {
  app: FastifyInstance;
  network: NetnsNetwork;
  dataDir: string;
  token: string;
  peer: WanPeer | null;
}

let rig: Rig | null = null;

afterEach(async () => {
  const r = rig;
  rig = null;
  if (!r) return;
  await r.peer?.close().catch(() => undefined);
  await r.app.close().catch(() => undefined);
  await rm(r.dataDir, { recursive: true, force: true });
});

async function startRig(existing?: string, keys?: WanKeys): Promise<Rig> {
  const dataDir = existing ?? (await mkdtemp(join(tmpdir(), 'kvm-wg-')));
  const { app, network } = await buildNetnsApp(dataDir);
  rig = {
    app,
    network,
    dataDir,
    token: '',
    peer: null,
  };
  await app.listen({ host: '127.0.0.1', port: 0 });
  rig.token = existing ? await login(app, PASSWORD) : await initAndLogin(app);
  await rig.network.ensureUp();
  await rig.network.attachConsole((socket) => app.server.emit('connection', socket), 64);
  rig.peer = await startWanPeer(rig.network.names, keys);
  return rig;
}

async function deviceLanAddress(r: Rig): Promise<string> {
  let ip = '';
  await vi.waitFor(
    async () => {
      ip = (await r.network.status()).ip_address;
      expect(ip).toMatch(/^192\.168\.8\./);
    },
    { timeout: 15_000, interval: 100 },
  );
  return ip;
}

function call(r: Rig, method: 'GET' | 'POST', path: string, payload?: string, type = 'text/plain') {
  return r.app.inject({
    method,
    url: `/api/wireguard/${path}`,
    headers: { token: r.token, ...(payload !== undefined ? { 'content-type': type } : {}) },
    ...(payload !== undefined ? { payload } : {}),
  });
}

async function waitConnected(r: Rig): Promise<void> {
  await vi.waitFor(
    async () => {
      const s = (await call(r, 'GET', 'status')).json().result;
      expect(s.state).toBe('connected');
    },
    { timeout: 20_000, interval: 20 },
  );
}

describe.skipIf(skipReason !== null)('WireGuard on real namespaces', () => {
  it('reaches the console only through the tunnel; a hostile configuration changes nothing; stop cuts the peer off and leaves the LAN', async () => {
    const r = await startRig();
    const peer = r.peer!;
    const lanIp = await deviceLanAddress(r);
    const console = `https://${WAN.tunnelDevice}/api/auth/check`;

    // Before the tunnel: the peer reaches neither the tunnel address nor the LAN.
    expect((await httpsFrom(peer.namespace, console, {}, 1500)).status).toBeNull();

    let res = await call(r, 'POST', 'config', peer.deviceConfig());
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).not.toContain('PrivateKey');
    expect(res.json().result.config.public_key).toBe(peer.devicePublicKey);
    res = await call(r, 'POST', 'start');
    expect(res.json().result).toEqual({ success: true, running: true });
    await waitConnected(r);

    const status = (await call(r, 'GET', 'status')).json().result;
    expect(status.interface).toBe(wgInterfaceName(join(r.dataDir, 'apps')));
    expect(status.peers[0].public_key).toBe(peer.peerPublicKey);
    expect(status.peers[0].latest_handshake).toBeGreaterThan(0);

    // Through the tunnel: the device's console, with its sessions.
    const anon = await httpsFrom(peer.namespace, console);
    expect(anon.status, anon.error ?? '').toBe(401);
    const authed = await httpsFrom(peer.namespace, console, { token: r.token });
    expect(authed.status).toBe(200);
    // The LAN address from the peer: no route.
    const viaLan = await httpsFrom(peer.namespace, `https://${lanIp}/api/auth/check`, {}, 1500);
    expect(viaLan.status).toBeNull();
    // And the console on the LAN still answers the LAN.
    expect((await httpsFrom(r.network.names.lan, `https://${lanIp}/api/auth/check`)).status).toBe(
      401,
    );

    // Hostile configurations: refused, nothing saved, the tunnel as it was.
    const saved = (await call(r, 'GET', 'config')).json().result.config;
    for (const bad of [
      peer.deviceConfig({ allowedIps: '192.168.8.0/24' }),
      peer.deviceConfig().replace(/PublicKey = .*/, 'PublicKey = not-a-key'),
      peer.deviceConfig().replace(/Endpoint = .*/, 'Endpoint = 198.51.100.2:99999'),
      '[Interface]\nPrivateKey = $(reboot)\n',
    ]) {
      const refused = await call(r, 'POST', 'config', bad);
      expect(refused.statusCode, bad).toBe(400);
      expect(refused.body).not.toMatch(/PrivateKey = [A-Za-z0-9+/]{43}=/);
    }
    expect((await call(r, 'GET', 'config')).json().result.config).toEqual(saved);
    expect((await httpsFrom(peer.namespace, console)).status).toBe(401);

    // Stop: the peer is cut off, the LAN console stays.
    res = await call(r, 'POST', 'stop');
    expect(res.json().result).toEqual({ success: true, running: false });
    expect((await httpsFrom(peer.namespace, console, {}, 1500)).status).toBeNull();
    expect((await httpsFrom(r.network.names.lan, `https://${lanIp}/api/auth/check`)).status).toBe(
      401,
    );
    const links = (await runCommand('ip', ['-n', r.network.names.dev, 'link', 'show'])).stdout;
    expect(links).not.toContain(status.interface);
  }, 90_000);

  it('restarts a wireguard-go that dies and applies the configuration again; nothing is left after the server stops', async () => {
    const r = await startRig();
    const peer = r.peer!;
    expect((await call(r, 'POST', 'config', peer.deviceConfig())).statusCode).toBe(200);
    expect((await call(r, 'POST', 'start')).statusCode).toBe(200);
    await waitConnected(r);
    const ifname = wgInterfaceName(join(r.dataDir, 'apps'));
    const pids = (await runCommand('ip', ['netns', 'pids', r.network.names.dev])).stdout;
    let killed = false;
    for (const pid of pids.split(/\s+/).filter(Boolean)) {
      const cmd = await runCommand('cat', [`/proc/${pid}/cmdline`]).catch(() => ({ stdout: '' }));
      if (cmd.stdout.startsWith('wireguard-go') && cmd.stdout.includes(ifname)) {
        process.kill(Number(pid), 'SIGKILL');
        killed = true;
      }
    }
    expect(killed).toBe(true);
    // Back with the configuration: the console through the tunnel again.
    await vi.waitFor(
      async () => {
        const res = await httpsFrom(
          peer.namespace,
          `https://${WAN.tunnelDevice}/api/auth/check`,
          {},
          1000,
        );
        expect(res.status).toBe(401);
      },
      { timeout: 30_000, interval: 200 },
    );

    const names = r.network.names;
    await peer.close();
    r.peer = null;
    await r.app.close();
    const left = await listNamespaces();
    expect(left).not.toContain(names.dev);
    expect(left).not.toContain(names.lan);
    expect(left).not.toContain(`kvmwan-${names.dev.slice(7)}`);
    const sockets = await readdir('/var/run/wireguard').catch(() => [] as string[]);
    expect(sockets).not.toContain(`${ifname}.sock`);
    expect(sockets).not.toContain(`wgp${names.dev.slice(7)}.sock`);
    await expect(stat(join(r.dataDir, 'run', 'apps', `${ifname}.setconf`))).rejects.toThrow();
  }, 90_000);

  it('a change that fails at a step puts the running tunnel back; the tunnel comes back after a server restart', async () => {
    const r = await startRig();
    const peer = r.peer!;
    expect((await call(r, 'POST', 'config', peer.deviceConfig())).statusCode).toBe(200);
    expect((await call(r, 'POST', 'start')).statusCode).toBe(200);
    await waitConnected(r);
    const saved = (await call(r, 'GET', 'config')).json().result.config;
    // A name nobody resolves: parsed and checked fine, but `wg setconf` fails on it.
    const unresolvable = peer
      .deviceConfig()
      .replace(/Endpoint = .*/, 'Endpoint = no-such-peer.lan:51820');
    const res = await call(r, 'POST', 'config', unresolvable);
    expect(res.statusCode, res.body).toBe(500);
    expect(res.json().result.error).toBe('WireguardTunnelFailedError');
    expect(res.json().result.error_msg).toContain('wg setconf');
    expect((await call(r, 'GET', 'config')).json().result.config).toEqual(saved);
    await waitConnected(r);
    const console = `https://${WAN.tunnelDevice}/api/auth/check`;
    await vi.waitFor(
      async () => expect((await httpsFrom(peer.namespace, console, {}, 1000)).status).toBe(401),
      { timeout: 15_000, interval: 100 },
    );

    // A restart (the app rebuilt over the same data folder): the tunnel comes back by itself.
    const dataDir = r.dataDir;
    await peer.close();
    r.peer = null;
    await r.app.close();
    rig = null;
    const again = await startRig(dataDir, peer.keys);
    await waitConnected(again);
    await vi.waitFor(
      async () =>
        expect((await httpsFrom(again.peer!.namespace, console, {}, 1000)).status).toBe(401),
      { timeout: 15_000, interval: 100 },
    );
  }, 90_000);

  it('stops a wireguard-go over its memory cap and says why', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'kvm-wg-cap-'));
    const network = new NetnsNetwork({ dataDir, root: dataDir, log: SILENT_LOGGER, eager: false });
    const driver = new WireguardDriver(appHost(dataDir, network, SILENT_LOGGER), {
      wireguardGo: 'wireguard-go',
      wg: 'wg',
      commandTimeoutMs: 10_000,
      // wireguard-go holds a few MiB: always over this
      memoryLimitBytes: 1024 * 1024,
      memorySampleMs: 50,
    });
    try {
      await network.init();
      await driver.init();
      const priv = (await runCommand('wg', ['genkey'])).stdout.trim();
      const other = (await runCommand('wg', ['genkey'])).stdout.trim();
      const pub = (await runCommand('wg', ['pubkey'], { input: `${other}\n` })).stdout.trim();
      const text = `[Interface]\nPrivateKey = ${priv}\nAddress = 10.77.0.2/24\n\n[Peer]\nPublicKey = ${pub}\nEndpoint = 198.51.100.2:51820\nAllowedIPs = 10.77.0.1/32\n`;
      await driver.setConfig(text, driver.parse(text));
      await driver.start();
      expect(driver.running).toBe(true);
      await vi.waitFor(
        async () => {
          const s = await driver.status();
          expect(s.state).toBe('error');
          expect(s.detail).toMatch(/over the cap of 1 MiB/);
        },
        { timeout: 10_000, interval: 50 },
      );
      expect(driver.running).toBe(false);
      expect(driver.pid).toBeNull();
    } finally {
      await driver.dispose();
      await network.dispose();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('a full tunnel (AllowedIPs 0.0.0.0/0) keeps the answers to a console client beyond the LAN gateway', async () => {
    const r = await startRig();
    const peer = r.peer!;
    const lanIp = await deviceLanAddress(r);
    const full = peer.deviceConfig({ allowedIps: '0.0.0.0/0' });
    expect((await call(r, 'POST', 'config', full)).statusCode).toBe(200);
    expect((await call(r, 'POST', 'start')).statusCode).toBe(200);
    await waitConnected(r);
    const check = `https://${lanIp}/api/auth/check`;
    // Through the tunnel, as before.
    const viaTunnel = `https://${WAN.tunnelDevice}/api/auth/check`;
    expect((await httpsFrom(peer.namespace, viaTunnel)).status).toBe(401);
    // A client on another network, routed by the LAN's gateway (the router's own WAN address):
    // without the reply policy its answers would go into the tunnel (0.0.0.0/1, 128.0.0.0/1).
    const routed = await httpsFromAddress(r.network.names.lan, WAN.router, check);
    expect(routed.status, routed.error ?? '').toBe(401);
    // The LAN itself, of course.
    expect((await httpsFrom(r.network.names.lan, check)).status).toBe(401);
    // Stop: the policy goes with the tunnel.
    expect((await call(r, 'POST', 'stop')).statusCode).toBe(200);
    const rules = (await runCommand('ip', ['-n', r.network.names.dev, 'rule', 'show'])).stdout;
    expect(rules).not.toContain('0x4b57');
    const nft = await runCommand('ip', [
      'netns',
      'exec',
      r.network.names.dev,
      'nft',
      'list',
      'tables',
    ]);
    expect(nft.stdout).not.toContain('kvm_wg_replies');
  }, 90_000);
});

/** An HTTPS request from inside `ns`, from its address `local`: the status, or the error code. */
async function httpsFromAddress(
  ns: string,
  local: string,
  url: string,
): Promise<{ status: number | null; error: string | null }> {
  const js = `const req = require('node:https').get(${JSON.stringify(url)}, { localAddress: ${JSON.stringify(local)}, rejectUnauthorized: false, timeout: 5000 }, (res) => {
  res.resume(); res.on('end', () => { console.log(JSON.stringify({ status: res.statusCode, error: null })); });
});
req.on('timeout', () => { console.log(JSON.stringify({ status: null, error: 'ETIMEDOUT' })); req.destroy(); });
req.on('error', (e) => { console.log(JSON.stringify({ status: null, error: e.code || e.message })); });`;
  const out = await runCommand('ip', ['netns', 'exec', ns, process.execPath, '-e', js], {
    timeoutMs: 20_000,
  });
  return JSON.parse(out.stdout.trim().split('\n')[0] ?? '{}') as {
    status: number | null;
    error: string | null;
  };
}
