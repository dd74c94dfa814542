/**
 * `npm run bench -- server`: {"cold_start_ms", "idle_rss_mb", "idle_rss_no_socket_mb"}.
 * cold_start_ms: spawn of `node server/dist/main.js` to the first answered HTTP request, median
 * of 7 starts over a fresh data folder (first start included: certificate-free, --no-tls).
 * idle_rss_mb: resident memory of the server 3 s after a login and an open event socket, as a
 * console left open: the socket's default `stream=1` keeps the encoder warm, so the testbed's
 * frames flow into ffmpeg (which runs in its own process, not counted).
 * idle_rss_no_socket_mb: the same server 3 s after the login, before that socket opens (no
 * frames): what the server itself holds, the difference being the warm video pipeline.
 * idle_spare_rss_mb, idle_spare_pss_mb: the server's ffmpeg children at that moment, resident
 * and proportional (shared library pages divided among the processes mapping them): the spare
 * encoder the hub starts before any viewer (media/video-hub.ts PRIME_MS), waiting on stdin.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, REPO_ROOT } from '../e2e/fixtures/server';
import WebSocket from 'ws';
import { median, note, round, runMarks, sized } from './lib';

async function untilAnswered(url: string, deadline: number): Promise<void> {
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline) throw new Error('server did not answer');
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** Resident and proportional MB of `pid`'s ffmpeg children. */
async function ffmpegChildrenMb(pid: number): Promise<{ rss: number; pss: number }> {
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  let rss = 0;
  let pss = 0;
  for (const child of children.split(' ').filter(Boolean)) {
    const comm = await readFile(`/proc/${child}/comm`, 'utf8').catch(() => '');
    if (comm.trim() !== 'ffmpeg') continue;
    const rollup = await readFile(`/proc/${child}/smaps_rollup`, 'utf8').catch(() => '');
    rss += Number(/^Rss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0) / 1024;
    pss += Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0) / 1024;
  }
  return { rss, pss };
}

async function once(measureRss: boolean): Promise<{
  startMs: number;
  rss: number;
  rssNoSocket: number;
  spare: { rss: number; pss: number };
}> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kvm-bench-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [
      join(REPO_ROOT, 'server/dist/main.js'),
      '--no-tls',
      '--listen',
      `127.0.0.1:${port}`,
      '--data',
      dataDir,
      '--target',
      'testbed',
    ],
    { stdio: 'ignore' },
  );
  try {
    await untilAnswered(`${base}/api/init/is_inited`, t0 + 15_000);
    const startMs = performance.now() - t0;
    let rss = 0;
    let rssNoSocket = 0;
    let spare = { rss: 0, pss: 0 };
    if (measureRss) {
      await fetch(`${base}/api/init/init?password=benchpass`);
      const login = await fetch(`${base}/api/auth/login`, {
        method: 'POST',
        body: new URLSearchParams({ user: 'admin', passwd: 'benchpass' }),
      });
      const { result } = (await login.json()) as { result: { token: string } };
      await new Promise((r) => setTimeout(r, 3000));
      rssNoSocket = await rssMb(child.pid!);
      spare = await ffmpegChildrenMb(child.pid!);
      const ws = new WebSocket(`ws://127.0.0.1:${port}/api/ws?auth_token=${result.token}`);
      await new Promise((r) => ws.once('message', r));
      await new Promise((r) => setTimeout(r, 3000));
      rss = await rssMb(child.pid!);
      ws.close();
    }
    return { startMs, rss, rssNoSocket, spare };
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dataDir, { recursive: true, force: true });
  }
}

const starts: number[] = [];
const rss: number[] = [];
const rssNoSocket: number[] = [];
const spareRss: number[] = [];
const sparePss: number[] = [];
for (let i = 0; i < sized(7, 2); i += 1) {
  const r = await once(i < sized(3, 1));
  starts.push(r.startMs);
  if (r.rss) rss.push(r.rss);
  if (r.rssNoSocket) rssNoSocket.push(r.rssNoSocket);
  if (r.rss) {
    spareRss.push(r.spare.rss);
    sparePss.push(r.spare.pss);
  }
  const rssNote = r.rss
    ? `, rss ${round(r.rss)} MB (${round(r.rssNoSocket)} MB before the socket; its ffmpeg ` +
      `then ${round(r.spare.rss)} MB resident, ${round(r.spare.pss)} MB proportional)`
    : '';
  note(`run ${i + 1}: start ${round(r.startMs)} ms${rssNote}`);
}
process.stdout.write(
  `${JSON.stringify({
    ...runMarks(),
    cold_start_ms: round(median(starts)),
    idle_rss_mb: round(median(rss)),
    idle_rss_no_socket_mb: round(median(rssNoSocket)),
    idle_spare_rss_mb: round(median(spareRss)),
    idle_spare_pss_mb: round(median(sparePss)),
  })}\n`,
);
