/**
 * `npm run bench -- upgrade`: firmware packages (issue 12), one JSON object.
 *
 * - package_verify_ms: a full release package of this tree (scripts/package.mjs: the built
 *   server bundle and console, as `npm run package` writes it; `--from` the tree the bench's
 *   preparation built, so the bench does not rebuild it a second time), verified by the
 *   device's verifyPackage (signature, every file's sha256 and size, model, min_version):
 *   median of 5 runs, the first (cold page cache) included in the runs. Notes give the package's
 *   size and file count.
 * - log_export_ms, terminal_echo_ms: testbedFigures() below, one testbed server for both.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../server/src/paths';
import { loadTrustedKeys, verifyPackage } from '../server/src/services/upgrade/package-reader';
import { ServerProcess } from '../e2e/fixtures/server';
import { median, note, round, shortMark, sized } from './lib';
import { benchLogin, terminalEchoTimes, terminalFields } from './terminal';

const run = promisify(execFile);
const RUNS = sized(5, 2);

async function packageVerify(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'kvm-bench-upgrade-'));
  try {
    const script = join(REPO_ROOT, 'scripts', 'package.mjs');
    await run(process.execPath, [script, '--gen-key', join(dir, 'k')]);
    const { stdout } = await run(
      process.execPath,
      [
        script,
        '--from',
        REPO_ROOT,
        '--version',
        'V99.0.0',
        '--key',
        join(dir, 'k.key'),
        '--out',
        dir,
      ],
      { timeout: 300_000 },
    );
    const file = stdout.split(' ')[0]!;
    const keys = await loadTrustedKeys([join(dir, 'k.pub')]);
    const times: number[] = [];
    let files = 0;
    for (let i = 0; i < RUNS; i++) {
      const t0 = performance.now();
      const r = await verifyPackage(file, keys, 'RM1', 'V0.1.0');
      times.push(performance.now() - t0);
      if (!r.signature_valid || !r.firmware_valid) throw new Error(`verify failed: ${r.reason}`);
      files = r.manifest!.files.length;
    }
    note(
      `package ${(await stat(file)).size} bytes, ${files} files, runs ${times.map((t) => round(t)).join(' ')} ms`,
    );
    return { package_verify_ms: round(median(times)) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// --- log export and terminal (testbed) ---

const LOG_EXPORTS = sized(10, 3);
const LOG_EXPORTS_FULL = sized(5, 2);

/** One `GET /api/upgrade/log` until the whole zip is in (ms), and the zip's size. */
async function logExportOnce(server: ServerProcess, token: string): Promise<[number, number]> {
  const t0 = performance.now();
  const res = await fetch(`${server.url}/api/upgrade/log`, {
    headers: { cookie: `auth_token=${token}` },
  });
  const zip = Buffer.from(await res.arrayBuffer());
  const ms = performance.now() - t0;
  if (res.status !== 200 || zip.readUInt32LE(0) !== 0x04034b50)
    throw new Error(`log export: HTTP ${res.status}`);
  return [ms, zip.length];
}

async function logExportMedian(server: ServerProcess, token: string, runs: number) {
  const times: number[] = [];
  let size = 0;
  for (let i = 0; i < runs; i += 1) {
    const [ms, bytes] = await logExportOnce(server, token);
    times.push(ms);
    size = bytes;
  }
  return { ms: median(times), size, times };
}

/**
 * What a device's log holds after it ran a while: the API used by a console (status reads,
 * mistyped passwords, refused requests), and the front end's posted log.
 */
async function exercise(server: ServerProcess, token: string): Promise<void> {
  const headers = { cookie: `auth_token=${token}` };
  const reads = [
    '/api/info',
    '/api/streamer',
    '/api/hid',
    '/api/atx',
    '/api/msd',
    '/api/auth/check',
  ];
  for (let r = 0; r < sized(20, 3); r += 1) {
    await Promise.all(
      reads.map((p) => fetch(`${server.url}${p}`, { headers }).then((res) => res.arrayBuffer())),
    );
    // a mistyped password, a stale token in a URL
    await fetch(`${server.url}/api/auth/login`, {
      method: 'POST',
      body: new URLSearchParams({ user: 'admin', passwd: `wrong-${r}` }),
    }).then((res) => res.arrayBuffer());
    await fetch(`${server.url}/api/info?auth_token=${'ab'.repeat(32)}`).then((res) =>
      res.arrayBuffer(),
    );
  }
  const frontend = Array.from(
    { length: sized(2000, 200) },
    (_, i) => `${new Date().toISOString()} [info] ws /api/ws event ${i} token=${token}\n`,
  ).join('');
  await fetch(`${server.url}/api/upgrade/log`, { method: 'POST', headers, body: frontend });
}

/**
 * Fills the rotated log files (`server.log.1`...) with `bytes` of pino lines like the server's
 * own, addresses and tokens included, as a device that ran for months has them: the bundle's
 * worst case is its 20 MiB cap of log text, masked line by line.
 */
async function seedRotatedLogs(dataDir: string, bytes: number): Promise<number> {
  const lines = [
    (i: number) =>
      `{"level":30,"time":${1795500000000 + i},"pid":4242,"reqId":"req-${i}","user":"admin","twofa":false,"msg":"login"}`,
    (i: number) =>
      `{"level":40,"time":${1795500000000 + i},"pid":4242,"reqId":"req-${i}","user":"admin","ip":"203.0.113.${i % 250}","factor":"password","via":"login","msg":"login failed"}`,
    (i: number) =>
      `{"level":20,"time":${1795500000000 + i},"pid":4242,"reqId":"req-${i}","err":"Forbidden","url":"/api/info?auth_token=${(i * 7919).toString(16).padStart(64, 'c')}","status":403,"msg":"request refused"}`,
    (i: number) =>
      `{"level":30,"time":${1795500000000 + i},"pid":4242,"peer":"2001:db8:${(i % 65535).toString(16)}::1","viewers":${i % 4},"msg":"webrtc viewer connected"}`,
    (i: number) =>
      `{"level":20,"time":${1795500000000 + i},"pid":4242,"netns":"kvmlan-f0176d27","line":"dnsmasq-dhcp[812]: DHCPACK(lan) 192.168.8.${i % 250} 52:54:00:12:34:56 guest","msg":"dnsmasq"}`,
  ];
  const fileBytes = 5 * 1024 * 1024; // the default log.file_max_bytes
  let written = 0;
  for (let n = 1; written < bytes; n += 1) {
    const parts: string[] = [];
    let size = 0;
    for (let i = 0; size < Math.min(fileBytes, bytes - written); i += 1) {
      const line = `${lines[i % lines.length]!(n * 1_000_000 + i)}\n`;
      parts.push(line);
      size += line.length;
    }
    await writeFile(join(dataDir, 'logs', `server.log.${n}`), parts.join(''));
    written += size;
  }
  return written;
}

/**
 * log_export_ms: `GET /api/upgrade/log` until the whole zip is received, median of
 * LOG_EXPORTS, after the server ran a while and served a console's requests (exercise());
 * log_export_full_ms: the same with the bundle's 20 MiB of rotated logs to mask and deflate.
 * terminal_echo_ms (p50, with p95 and samples): bench/terminal.ts on the same server.
 */
async function testbedFigures(): Promise<Record<string, number>> {
  const server = await ServerProcess.start({ target: 'testbed' });
  try {
    const token = await benchLogin(server, 'benchpass');
    await exercise(server, token);
    const echo = await terminalEchoTimes(server, token);
    // the server's own writes settle (pino's file stream is asynchronous)
    await new Promise((r) => setTimeout(r, sized(1000, 100)));
    const logs = await readdir(join(server.dataDir, 'logs'));
    const plain = await logExportMedian(server, token, LOG_EXPORTS);
    note(
      `log export: ${logs.join(' ')}, zip ${plain.size} bytes, runs ${plain.times.map((t) => round(t)).join(' ')} ms`,
    );
    const seeded = await seedRotatedLogs(server.dataDir, sized(20, 4) * 1024 * 1024);
    const full = await logExportMedian(server, token, LOG_EXPORTS_FULL);
    note(
      `log export with ${seeded} bytes of rotated logs: zip ${full.size} bytes, runs ${full.times.map((t) => round(t)).join(' ')} ms`,
    );
    return {
      log_export_ms: round(plain.ms),
      log_export_full_ms: round(full.ms),
      ...terminalFields(echo),
    };
  } finally {
    await server.dispose();
  }
}

// --- the JSON ---

async function main(): Promise<void> {
  const figures = { ...(await packageVerify()), ...(await testbedFigures()) };
  process.stdout.write(`${JSON.stringify({ ...shortMark(), ...figures })}\n`);
}

await main();
