/**
 * `npm run bench -- apps` (issue 27's figures): the WireGuard app on real namespaces, a device
 * server (testbed target, HTTPS, its network in `kvmdev-<h>`) in this process, a peer on the test
 * "Internet" behind the LAN's NAT (server/src/platform/netns/wan-test-support.ts):
 *
 * - `wireguard_handshake_ms`: `POST /api/wireguard/start` sent → the first handshake the device
 *   reports (`wg show dump`, polled every 5 ms); `wireguard_start_ms` is the part until the
 *   start call answered (wireguard-go started, configured, addresses, link, routes);
 * - `wireguard_console_rtt_ms` (p50, and `_p95_ms`): an authenticated `GET /api/auth/check`
 *   from the peer's namespace to the device's tunnel address, over one kept-alive HTTPS
 *   connection (tunnel + NAT + console bridge + TLS + session check);
 * - `apps_idle_cpu_percent` / `apps_idle_rss_mb`: wireguard-go and the console bridge's child at
 *   idle with the tunnel up (keepalive every 25 s) over `IDLE_S`, from /proc; the CLI apps
 *   (Tailscale, NetBird, ZeroTier) are not installable here: null with the reason.
 *
 * Needs root, wireguard-go, wg and nft; prints one JSON object.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildNetnsApp, initAndLogin } from '../server/src/test-helpers';
import { startWanPeer, WAN, type WanPeer } from '../server/src/platform/netns/wan-test-support';
import { median, note, percentile, round, runMarks, sized } from './lib';

const RTT_SAMPLES = sized(200, 40);
const IDLE_S = sized(10, 4);
const TICK = 100; // USER_HZ

async function procTimes(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / TICK; // utime + stime, seconds
}

async function rssMb(pid: number): Promise<number> {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

/** Pids in `ns` whose command line holds `needle`. */
async function pidsIn(ns: string, needle: string): Promise<number[]> {
  const out = await new Promise<string>((resolve) => {
    let s = '';
    const p = spawn('ip', ['netns', 'pids', ns]);
    p.stdout.on('data', (d: Buffer) => (s += d.toString()));
    p.on('close', () => resolve(s));
  });
  const pids: number[] = [];
  for (const pid of out.split(/\s+/).filter(Boolean).map(Number)) {
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(needle)) pids.push(pid);
  }
  return pids;
}

/** A node client in the peer namespace timing `count` authenticated GETs on one connection. */
function rttFromPeer(ns: string, url: string, token: string, count: number): Promise<number[]> {
  const js = `const https = require('node:https');
const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
const times = [];
const one = (i) => {
  const t0 = process.hrtime.bigint();
  https.get(${JSON.stringify(url)}, { agent, rejectUnauthorized: false, headers: { token: ${JSON.stringify(token)} } }, (res) => {
    res.resume();
    res.on('end', () => {
      if (res.statusCode !== 200) { console.error('status ' + res.statusCode); process.exit(1); }
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (i + 1 < ${count + 5}) one(i + 1); else { console.log(JSON.stringify(times.slice(5))); process.exit(0); }
    });
  }).on('error', (e) => { console.error(e.code || e.message); process.exit(1); });
};
one(0);`;
  const env = { ...process.env };
  delete env['NODE_OPTIONS'];
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const p = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', js], { env });
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out) as number[]) : reject(new Error(`rtt client: ${err}`)),
    );
  });
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kvm-bench-apps-'));
  const { app, network } = await buildNetnsApp(dataDir, '0.0.0-bench');
  let peer: WanPeer | null = null;
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const token = await initAndLogin(app);
    await network.ensureUp();
    await network.attachConsole((s) => app.server.emit('connection', s), 256);
    peer = await startWanPeer(network.names);
    const call = (method: 'GET' | 'POST', path: string, payload?: string) =>
      app.inject({
        method,
        url: `/api/wireguard/${path}`,
        headers: { token, ...(payload ? { 'content-type': 'text/plain' } : {}) },
        ...(payload ? { payload } : {}),
      });
    // the device's LAN lease first (the tunnel's packets leave through it)
    for (let i = 0; i < 300 && !(await network.status()).ip_address; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const saved = await call('POST', 'config', peer.deviceConfig());
    if (saved.statusCode !== 200) throw new Error(`config: ${saved.body}`);

    const t0 = performance.now();
    const started = await call('POST', 'start');
    if (started.statusCode !== 200) throw new Error(`start: ${started.body}`);
    const startMs = performance.now() - t0;
    let handshakeMs: number | null = null;
    while (performance.now() - t0 < 20_000) {
      const s = (await call('GET', 'status')).json().result as {
        peers: { latest_handshake: number }[];
      };
      if (s.peers.some((p) => p.latest_handshake > 0)) {
        handshakeMs = performance.now() - t0;
        break;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    if (handshakeMs === null) throw new Error('no handshake within 20 s');
    note(`handshake after ${round(handshakeMs)} ms`);

    const times = await rttFromPeer(
      peer.namespace,
      `https://${WAN.tunnelDevice}/api/auth/check`,
      token,
      RTT_SAMPLES,
    );

    const wgPids = await pidsIn(network.names.dev, 'wireguard-go');
    const bridgePids = await pidsIn(network.names.dev, 'pauseOnConnect');
    const pids = [...wgPids, ...bridgePids];
    const cpu0 = await Promise.all(pids.map(procTimes));
    const w0 = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const cpu1 = await Promise.all(pids.map(procTimes));
    const wall = (performance.now() - w0) / 1000;
    const cpuS = cpu1.reduce((a, v, i) => a + v - (cpu0[i] ?? 0), 0);
    const rss = (await Promise.all(pids.map(rssMb))).reduce((a, v) => a + v, 0);
    const wgRss = (await Promise.all(wgPids.map(rssMb))).reduce((a, v) => a + v, 0);

    process.stdout.write(
      `${JSON.stringify({
        ...runMarks(),
        wireguard_handshake_ms: round(handshakeMs),
        wireguard_start_ms: round(startMs),
        wireguard_console_rtt_ms: round(median(times), 2),
        wireguard_console_rtt_p95_ms: round(percentile(times, 95), 2),
        wireguard_console_rtt_samples: times.length,
        apps_idle_cpu_percent: round((cpuS / wall) * 100, 2),
        apps_idle_rss_mb: round(rss),
        apps_idle_wireguard_go_rss_mb: round(wgRss),
        apps_idle_window_s: IDLE_S,
        apps_idle_processes: { 'wireguard-go': wgPids.length, console_bridge: bridgePids.length },
        cli_apps_idle: null,
        cli_apps_idle_reason:
          'tailscale, netbird and zerotier-one are not installable here (no package): their drivers are tested on recorded fixtures',
      })}\n`,
    );
  } finally {
    await peer?.close().catch(() => undefined);
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`apps bench: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
