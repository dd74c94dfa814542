/**
 * `npm run bench -- media`: one JSON object of the virtual-media figures.
 *
 * - upload_mb_per_s: POST /api/msd/write of a 4 GB body of zeros over loopback, request start to
 *   answer (the answer comes after the image is fsynced). The body is generated on the fly by a
 *   child process (never allocated whole), so the server process runs only the server.
 * - upload_rss_growth_mb: the server process's peak RSS during that upload minus its RSS just
 *   before (sampled every 10 ms).
 * - dd_mb_per_s: `dd if=/dev/zero bs=1MB conv=fsync` of the upload's size into the same folder,
 *   run just before and just after the upload (the mean of the two; each is in the notes), spawn
 *   to exit: what the disk takes at that moment. The machine may be shared, so the upload is
 *   judged against it: upload_to_dd = upload_mb_per_s / dd_mb_per_s (1 = as fast as dd).
 * - write_remote_mb_per_s: POST /api/msd/write_remote of a 2.5 GB sparse file served by a plain
 *   node:http server in a child process, request start to the last ndjson record.
 *
 * MB = 10^6 bytes. The data folder goes to `.cache/bench-media/` of the checkout (the main disk;
 * /tmp may be a small tmpfs), or KVM_BENCH_MEDIA_DIR; everything written is removed at the end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, rmdir, statfs, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from '../server/src/test-helpers';
import { REPO_ROOT } from '../server/src/paths';
import { note, round, runMarks, sized, initAndLogin } from './lib';

const PASSWORD = 'benchpass';
const UPLOAD_BYTES = Number(process.env.KVM_BENCH_MEDIA_UPLOAD ?? sized(4e9, 200e6));
const REMOTE_BYTES = Number(process.env.KVM_BENCH_MEDIA_REMOTE ?? sized(2.5e9, 200e6));

/** The helper process: `upload <url> <size> <headers json>` or `serve <file>`. */
const HELPER = `
import { createReadStream, statSync } from 'node:fs';
import http from 'node:http';
const [mode, a, b, c] = process.argv.slice(1);
if (mode === 'upload') {
  const size = Number(b);
  const zeros = Buffer.alloc(1024 * 1024);
  const started = performance.now();
  const req = http.request(a, {
    method: 'POST',
    headers: { ...JSON.parse(c), 'content-type': 'application/octet-stream', 'content-length': String(size) },
  });
  req.on('response', (res) => {
    const chunks = [];
    res.on('data', (d) => chunks.push(d));
    res.on('end', () => {
      process.stdout.write(JSON.stringify({ status: res.statusCode, body: Buffer.concat(chunks).toString(), ms: performance.now() - started }) + '\\n');
    });
  });
  req.on('error', (err) => { process.stdout.write(JSON.stringify({ error: err.message }) + '\\n'); });
  let sent = 0;
  const more = () => {
    while (sent < size) {
      const n = Math.min(zeros.length, size - sent);
      sent += n;
      if (!req.write(n === zeros.length ? zeros : zeros.subarray(0, n))) { req.once('drain', more); return; }
    }
    req.end();
  };
  more();
} else if (mode === 'serve') {
  const size = statSync(a).size;
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) });
    createReadStream(a, { highWaterMark: 1024 * 1024 }).pipe(res);
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'));
}
`;

function helper(args: string[]): { child: ChildProcess; first: Promise<Record<string, unknown>> } {
  const child = spawn(process.execPath, ['--input-type=module', '-e', HELPER, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const first = new Promise<Record<string, unknown>>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => resolve(JSON.parse(line) as Record<string, unknown>));
    child.once('exit', (code) => reject(new Error(`helper ${args[0]} exited with ${code}`)));
  });
  return { child, first };
}

interface Served {
  app: FastifyInstance;
  base: string;
  headers: Record<string, string>;
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}

/** The whole server (buildTestApp, testbed target), its requests authenticated. */
async function serve(dataDir: string): Promise<Served> {
  // the remote of write_remote is a loopback server, which the device refuses unless listed
  const app = await buildTestApp(dataDir, { msd: { remote: { allow_hosts: ['127.0.0.1'] } } });
  const base = await listen(app);
  const token = await initAndLogin(base, PASSWORD);
  return { app, base, headers: { token } };
}

async function upload(
  s: Served,
  name: string,
  size: number,
): Promise<{ ms: number; rssGrowthMb: number }> {
  const url = `${s.base}/api/msd/write?image=${name}&remove_incomplete=1`;
  const before = process.memoryUsage.rss();
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 10);
  try {
    const { child, first } = helper(['upload', url, String(size), JSON.stringify(s.headers)]);
    const answer = (await first) as { status?: number; body?: string; ms?: number; error?: string };
    child.kill();
    if (answer.status !== 200) {
      throw new Error(`upload: ${answer.status ?? ''} ${answer.body ?? answer.error ?? ''}`);
    }
    const result = (JSON.parse(answer.body!) as { result: { image: { written: number } } }).result;
    if (result.image.written !== size) throw new Error(`upload: wrote ${result.image.written}`);
    return { ms: answer.ms!, rssGrowthMb: (peak - before) / 1e6 };
  } finally {
    clearInterval(sampler);
  }
}

/** dd of `bytes` zeros into `dir`, fsynced; MB/s, or null when there is no dd. */
async function ddMbPerS(dir: string, bytes: number): Promise<number | null> {
  const file = join(dir, 'dd.img');
  const started = performance.now();
  const child = spawn(
    'dd',
    ['if=/dev/zero', `of=${file}`, 'bs=1000000', `count=${Math.ceil(bytes / 1e6)}`, 'conv=fsync'],
    { stdio: 'ignore' },
  );
  const code = await new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(null));
    child.once('exit', resolve);
  });
  const ms = performance.now() - started;
  await rm(file, { force: true });
  if (code !== 0) return null;
  return Math.ceil(bytes / 1e6) / (ms / 1000);
}

async function writeRemote(s: Served, dir: string, size: number): Promise<number> {
  const file = join(dir, 'remote-source.img');
  await writeFile(file, '');
  await truncate(file, size); // sparse: reading it costs no disk
  const { child, first } = helper(['serve', file]);
  try {
    const { port } = (await first) as { port: number };
    const started = performance.now();
    const res = await fetch(
      `${s.base}/api/msd/write_remote?url=${encodeURIComponent(`http://127.0.0.1:${port}/remote.img`)}&remove_incomplete=1`,
      { method: 'POST', headers: s.headers },
    );
    const body = await res.text();
    const ms = performance.now() - started;
    const records = body.split('\r\n').filter((l) => l !== '');
    const last = JSON.parse(records.at(-1) ?? '{}') as {
      ok?: boolean;
      result?: { image?: { written: number } };
    };
    if (res.status !== 200 || !last.ok || last.result?.image?.written !== size) {
      throw new Error(`write_remote: ${res.status} ${records.at(-1)}`);
    }
    note(`write_remote: ${records.length} ndjson records`);
    return ms;
  } finally {
    child.kill();
    await rm(file, { force: true });
  }
}

const root = process.env.KVM_BENCH_MEDIA_DIR ?? join(REPO_ROOT, '.cache', 'bench-media');
await mkdir(root, { recursive: true });
const dir = await mkdtemp(join(root, 'run-'));
const fs = await statfs(dir);
const freeGb = (fs.bavail * fs.bsize) / 1e9;
note(`data folder ${dir}: ${round(freeGb)} GB free`);
if (freeGb < (Math.max(UPLOAD_BYTES, REMOTE_BYTES * 2) + 1e9) / 1e9) {
  throw new Error(`not enough room in ${root} (KVM_BENCH_MEDIA_DIR picks another folder)`);
}
const served = await serve(join(dir, 'data'));
try {
  // warm-up: code paths, heap, the first file of the folder
  await upload(served, 'warm.img', 64e6);
  const ddBefore = await ddMbPerS(dir, UPLOAD_BYTES);
  const up = await upload(served, 'upload.img', UPLOAD_BYTES);
  const uploadMbPerS = UPLOAD_BYTES / 1e6 / (up.ms / 1000);
  await rm(join(dir, 'data', 'msd', 'images', 'upload.img'));
  const ddAfter = await ddMbPerS(dir, UPLOAD_BYTES);
  const ddMb = ddBefore !== null && ddAfter !== null ? (ddBefore + ddAfter) / 2 : null;
  note(
    ddMb === null
      ? 'dd: not available, no dd_mb_per_s'
      : `dd: ${round(ddBefore!)} MB/s before the upload, ${round(ddAfter!)} MB/s after`,
  );
  note(
    `upload: ${round(UPLOAD_BYTES / 1e9, 2)} GB in ${round(up.ms / 1000, 2)} s, ` +
      `RSS +${round(up.rssGrowthMb)} MB`,
  );
  const remoteMs = await writeRemote(served, dir, REMOTE_BYTES);
  const remoteMbPerS = REMOTE_BYTES / 1e6 / (remoteMs / 1000);
  note(`write_remote: ${round(REMOTE_BYTES / 1e9, 2)} GB in ${round(remoteMs / 1000, 2)} s`);
  process.stdout.write(
    `${JSON.stringify({
      ...runMarks(),
      upload_mb_per_s: round(uploadMbPerS),
      upload_rss_growth_mb: round(up.rssGrowthMb),
      dd_mb_per_s: ddMb === null ? null : round(ddMb),
      upload_to_dd: ddMb === null ? null : round(uploadMbPerS / ddMb, 2),
      write_remote_mb_per_s: round(remoteMbPerS),
    })}\n`,
  );
} finally {
  await served.app.close();
  await rm(dir, { recursive: true, force: true });
  await rmdir(root).catch(() => undefined); // only if no other run is using it
}
