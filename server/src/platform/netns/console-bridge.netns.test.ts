/**
 * The console bridge on real namespaces (issue 27): a connection to port 443 inside the device's
 * namespace reaches the sink with its real remote address, the cap closes the ones over it, a
 * killed bridge comes back, and it is gone with the namespaces.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SILENT_LOGGER } from '../../log';
import { runCommand } from '../../process/run';
import { NetnsNetwork } from '../../drivers/network/netns';
import { listNamespaces, namespaceSkipReason } from './test-support';
import { CONSOLE_PORT } from './console-bridge';

const skipReason = namespaceSkipReason();

let network: NetnsNetwork | null = null;
let dataDir = '';
const held: Socket[] = [];

afterEach(async () => {
  for (const s of held.splice(0)) s.destroy();
  await network?.dispose();
  network = null;
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Opens `count` connections from the LAN namespace; how many the far side closed within `ms`. */
async function closedOf(lan: string, ip: string, count: number, ms: number): Promise<number> {
  const js = `const net = require('node:net');
let closed = 0; let opened = 0;
for (let i = 0; i < ${count}; i++) {
  const c = net.connect(${CONSOLE_PORT}, ${JSON.stringify(ip)});
  c.on('connect', () => opened++);
  c.on('close', () => closed++);
  c.on('error', () => {});
}
setTimeout(() => { console.log(JSON.stringify({ opened, closed })); process.exit(0); }, ${ms});`;
  const { stdout } = await runCommand('ip', ['netns', 'exec', lan, process.execPath, '-e', js], {
    timeoutMs: ms + 10_000,
  });
  const r = JSON.parse(stdout.trim()) as { opened: number; closed: number };
  return r.opened === count ? r.closed : -1;
}

async function bridgePids(dev: string): Promise<number[]> {
  const { stdout } = await runCommand('ip', ['netns', 'pids', dev]);
  const out: number[] = [];
  for (const pid of stdout.split(/\s+/).filter(Boolean).map(Number)) {
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes('pauseOnConnect')) out.push(pid);
  }
  return out;
}

describe.skipIf(skipReason !== null)('console bridge on real namespaces', () => {
  it('hands connections to the sink with their address, caps them, comes back when killed, goes with the namespaces', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'kvm-bridge-'));
    network = new NetnsNetwork({ dataDir, root: dataDir, log: SILENT_LOGGER, eager: false });
    await network.init();
    const remotes: string[] = [];
    await network.attachConsole((socket) => {
      // dual-stack: an IPv4 client shows mapped (the edge unmaps it)
      remotes.push((socket.remoteAddress ?? '').replace(/^::ffff:/, ''));
      held.push(socket);
    }, 2);
    await network.ensureUp();
    let ip = '';
    await vi.waitFor(
      async () => {
        ip = (await network!.status()).ip_address;
        expect(ip).toMatch(/^192\.168\.8\./);
      },
      { timeout: 15_000, interval: 100 },
    );
    await vi.waitFor(async () => expect(await bridgePids(network!.names.dev)).toHaveLength(1), {
      timeout: 15_000,
      interval: 100,
    });

    // Three connections, a cap of two: the third is closed at once, the two are held.
    expect(await closedOf(network.names.lan, ip, 3, 1500)).toBe(1);
    expect(remotes.slice(0, 2)).toEqual(['192.168.8.1', '192.168.8.1']);
    for (const s of held.splice(0)) s.destroy();

    // Killed: the Supervisor starts it again and it serves again.
    const [pid] = await bridgePids(network.names.dev);
    process.kill(pid!, 'SIGKILL');
    await vi.waitFor(
      async () => {
        const pids = await bridgePids(network!.names.dev);
        expect(pids.length === 1 && pids[0] !== pid).toBe(true);
        expect(await closedOf(network!.names.lan, ip, 1, 500)).toBe(0);
      },
      { timeout: 20_000, interval: 200 },
    );
    for (const s of held.splice(0)) s.destroy();

    const names = network.names;
    await network.dispose();
    network = null;
    const left = await listNamespaces();
    expect(left).not.toContain(names.dev);
    expect(left).not.toContain(names.lan);
  }, 90_000);
});
