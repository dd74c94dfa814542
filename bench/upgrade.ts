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
 * - upgrade_downtime_s, rollback_s: installFigures() below, a testbed server under the
 *   launcher with an install folder of its own, as `npm start` runs it;
 *   upgrade_downtime_qemu_s (full mode only): the same upgrades on the QEMU target.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../server/src/paths';
import { loadTrustedKeys, verifyPackage } from '../server/src/services/upgrade/package-reader';
import { ServerProcess } from '../e2e/fixtures/server';
import { median, note, round, SHORT, runMarks, sized } from './lib';
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

// --- install: downtime and rollback (launcher, testbed) ---

const UPGRADES = sized(3, 1);

/** Uploads `file` as the package waiting for start (multipart `file`, as the console does). */
async function uploadPackage(server: ServerProcess, token: string, file: string): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await readFile(file))]), 'update.pkg');
  const res = await fetch(`${server.url}/api/upgrade/upload`, {
    method: 'POST',
    headers: { cookie: `auth_token=${token}` },
    body: form,
  });
  if (res.status !== 200) throw new Error(`upload: HTTP ${res.status} ${await res.text()}`);
}

/** POSTs start; the time it was sent (performance.now()) and the upgrade's id. */
async function startUpgrade(server: ServerProcess, token: string) {
  const sent = performance.now();
  const res = await fetch(`${server.url}/api/upgrade/start`, {
    method: 'POST',
    headers: { cookie: `auth_token=${token}` },
  });
  const body = (await res.json()) as { result: { status: string; id?: string; message?: string } };
  if (body.result.status !== 'Upgrade started') {
    throw new Error(`start: ${body.result.status} ${body.result.message ?? ''}`);
  }
  return { sent, id: body.result.id! };
}

/** Polls every 20 ms until `fn` answers true (errors: the device is down); the time it did. */
async function until(fn: () => Promise<boolean>, timeoutMs = 120_000): Promise<number> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const ok = await fn().catch(() => false);
    if (ok) return performance.now();
    if (performance.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function versionIs(server: ServerProcess, token: string, version: string) {
  const res = await fetch(`${server.url}/api/upgrade/version`, {
    headers: { cookie: `auth_token=${token}` },
    signal: AbortSignal.timeout(1000),
  });
  const body = (await res.json()) as { result?: { version?: string } };
  return body.result?.version === version;
}

/**
 * upgrade_downtime_s: POST start sent → the new version answers /api/upgrade/version (GL's 1 s
 * before the restart included: it is downtime the user waits through), median of UPGRADES
 * upgrades V+1, V+2, … of this tree's own build. rollback_s: POST start of a package whose
 * server exits at once → the previous version answers again with the failure recorded.
 */
async function installFigures(target: 'testbed' | 'qemu'): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'kvm-bench-install-'));
  const script = join(REPO_ROOT, 'scripts', 'package.mjs');
  const pkg = async (args: string[]) =>
    (await run(process.execPath, [script, ...args], { timeout: 300_000 })).stdout.split(' ')[0]!;
  let server: ServerProcess | null = null;
  try {
    await run(process.execPath, [script, '--gen-key', join(dir, 'k')]);
    const versions = Array.from({ length: UPGRADES }, (_, i) => `V90.0.${i + 1}`);
    const files: string[] = [];
    for (const v of versions) {
      files.push(
        await pkg(['--from', REPO_ROOT, '--version', v, '--key', join(dir, 'k.key'), '--out', dir]),
      );
    }
    const broken = join(dir, 'broken');
    await mkdir(join(broken, 'server', 'dist'), { recursive: true });
    await mkdir(join(broken, 'web', 'dist'), { recursive: true });
    await writeFile(join(broken, 'package.json'), '{"name":"kvm-console","type":"module"}');
    await writeFile(join(broken, 'server', 'dist', 'main.js'), 'process.exit(1);\n');
    await writeFile(join(broken, 'web', 'dist', 'index.html'), '<!doctype html>');
    const brokenFile = await pkg([
      '--from',
      broken,
      '--version',
      'V99.0.0',
      '--key',
      join(dir, 'k.key'),
      '--out',
      dir,
    ]);

    server = await ServerProcess.start({
      target,
      installDir: join(dir, 'install'),
      config: `upgrade:\n  trusted_keys: [${join(dir, 'k.pub')}]\n`,
    });
    const token = await benchLogin(server, 'benchpass');
    const s = server;
    const downtimes: number[] = [];
    for (let i = 0; i < versions.length; i++) {
      await uploadPackage(s, token, files[i]!);
      const { sent } = await startUpgrade(s, token);
      const answered = await until(() => versionIs(s, token, versions[i]!));
      downtimes.push((answered - sent) / 1000);
    }
    if (target === 'qemu') {
      note(`qemu target: upgrades ${downtimes.map((d) => round(d, 2)).join(' ')} s`);
      return { upgrade_downtime_qemu_s: round(median(downtimes), 2) };
    }
    const last = versions[versions.length - 1]!;
    await uploadPackage(s, token, brokenFile);
    const { sent, id } = await startUpgrade(s, token);
    const back = await until(async () => {
      const res = await fetch(`${s.url}/api/upgrade/status`, {
        headers: { cookie: `auth_token=${token}` },
        signal: AbortSignal.timeout(1000),
      });
      const st = (await res.json()) as {
        result: { last_upgrade: { id: string; result: string } | null };
      };
      return st.result.last_upgrade?.id === id && st.result.last_upgrade.result === 'failed';
    });
    if (!(await versionIs(s, token, last)))
      throw new Error(`after the rollback the version is not ${last}`);
    note(
      `upgrades ${downtimes.map((d) => round(d, 2)).join(' ')} s (1 s of it GL's delay before the restart), rollback ${round((back - sent) / 1000, 2)} s`,
    );
    return {
      upgrade_downtime_s: round(median(downtimes), 2),
      rollback_s: round((back - sent) / 1000, 2),
    };
  } finally {
    await server?.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

// --- the JSON ---

async function main(): Promise<void> {
  const figures = {
    ...(await packageVerify()),
    ...(await testbedFigures()),
    ...(await installFigures('testbed')),
    // The product's default target, with its VM stopped and started again: full mode only.
    ...(SHORT ? {} : await installFigures('qemu')),
  };
  process.stdout.write(`${JSON.stringify({ ...runMarks(), ...figures })}\n`);
}

await main();
