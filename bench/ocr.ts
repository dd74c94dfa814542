/**
 * OCR of the remote screen (issue 13's figure `ocr_ms`): a 1024x768 guest text screen read back
 * and compared with the guest's own text buffer.
 *
 * The server runs in this process (buildTestApp) on the QEMU target. Over the guest's serial
 * line (<data>/run/serial.sock, whose shell runs each line at once) the bench clears tty1, hides
 * its cursor and writes known lines of console-like text to it, then runs the guest's `screen`
 * command, which prints tty1's text buffer between markers on the serial log: the oracle. Then
 * it reads the screen through `GET /api/streamer/snapshot?ocr=1` (kvmd's query), `samples`
 * times; when that route is missing, it takes a raw frame from the video hub, makes it a JPEG
 * with ffmpeg and calls the OCR service itself (the notes say which; that time leaves out the
 * HTTP request). Lines the OCR got wrong are in the notes; KVM_OCR_DUMP=<prefix> also writes the
 * snapshot's JPEG, the frame (PNG) and the text to <prefix>.jpg, .png and .txt, to try other
 * settings on.
 *
 * - ocr_ms: median time of one OCR answer (the whole request: frame, JPEG, ffmpeg, tesseract).
 * - ocr_cpu_ms: median CPU time of one answer's ffmpeg and tesseract (this process's exited
 *   children): the work itself, which a busy machine stretches in ocr_ms but not here.
 * - ocr_char_accuracy: 1 - edit distance / characters of the oracle, both with runs of blanks
 *   made one space, blank lines dropped (0..1).
 * - ocr_lines_exact / ocr_lines: oracle lines the OCR text has exactly, in order; ocr_match: 1
 *   when every line matches, else 0.
 * - calibration_ms, calibration_cpu_ms (and `_end_` twins), load_1m, cores (alone only):
 *   lib.machineSpeed at the start and the end, to tell a slower machine from slower code.
 *
 * Short mode reads the testbed screen instead (no VM to boot): its label, cropped with
 * ocr_left/top/right/bottom. (Its 5x7 font reads poorly beyond those letters: O and 0, U and V.)
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from '../server/src/test-helpers';
import type { RawFrame } from '../server/src/drivers/video/types';
import { machineSpeed, median, note, round, runMarks, sized, SHORT, initAndLogin } from './lib';

const PASSWORD = 'benchpass';
const SAMPLES = sized(5, 2);

export interface OcrFigures {
  ocr_ms: number;
  /** CPU ms the answer's ffmpeg and tesseract used (QEMU target only). */
  ocr_cpu_ms?: number;
  ocr_char_accuracy: number;
  ocr_lines_exact: number;
  ocr_lines: number;
  /** 1 when every line of the screen was read back exactly (after blank normalisation). */
  ocr_match: number;
}

interface Served {
  app: FastifyInstance;
  base: string;
  token: string;
  dir: string;
}

async function serve(target: 'qemu' | 'testbed'): Promise<Served> {
  const dir = await mkdtemp(join(tmpdir(), `kvm-bench-ocr-${target}-`));
  const app = await buildTestApp(dir, { target });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const token = await initAndLogin(base, PASSWORD);
    return { app, base, token, dir };
  } catch (err) {
    await app.close();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, ms: number) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One raw frame of the hub as a JPEG (ffmpeg), for when the snapshot route is not there. */
async function rawJpeg(s: Served, png = false): Promise<Buffer> {
  // the first frame may come during subscribeRaw itself (the capture starts synchronously)
  let first: RawFrame | null = null;
  let got: (f: RawFrame) => void = (f) => (first = f);
  const off = s.app.ctx.video.subscribeRaw((f) => {
    const copy = { ...f, data: Buffer.from(f.data) };
    f.release?.();
    got(copy);
  });
  const frame = await new Promise<RawFrame>((resolve) => {
    if (first) resolve(first);
    else got = resolve;
  });
  off();
  return new Promise((resolve, reject) => {
    const child = execFile(
      'ffmpeg',
      ['-hide_banner', '-loglevel', 'error', '-f', 'rawvideo', '-pix_fmt', frame.format]
        .concat(['-s', `${frame.width}x${frame.height}`, '-i', 'pipe:0', '-frames:v', '1'])
        .concat(
          png
            ? ['-f', 'image2pipe', '-c:v', 'png', 'pipe:1']
            : ['-pix_fmt', 'yuvj420p', '-q:v', '3', '-f', 'mjpeg', 'pipe:1'],
        ),
      { encoding: 'buffer', timeout: 10_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
    child.stdin?.end(frame.data);
  });
}

let via = '';

/** The screen's text with kvmd's snapshot query, and how long the answer took. */
async function readScreen(
  s: Served,
  crop: Record<string, number> = {},
): Promise<{ text: string; ms: number }> {
  const q = new URLSearchParams({
    ocr: '1',
    ...Object.fromEntries(Object.entries(crop).map(([k, v]) => [k, String(v)])),
  });
  const t0 = performance.now();
  const res = await fetch(`${s.base}/api/streamer/snapshot?${q}`, { headers: { token: s.token } });
  const text = await res.text();
  // the route, or the route without its OCR wired in: then the service directly
  const missing = res.status === 404 || (res.status === 503 && text.includes('OCR is not'));
  if (!missing) {
    if (!res.ok) throw new Error(`snapshot?ocr=1: ${res.status} ${text}`);
    via = 'GET /api/streamer/snapshot?ocr=1';
    return { text, ms: performance.now() - t0 };
  }
  const t1 = performance.now();
  const jpeg = await rawJpeg(s);
  const read = await s.app.ctx.ocr.recognize(jpeg, {
    langs: [],
    left: crop['ocr_left'] ?? -1,
    top: crop['ocr_top'] ?? -1,
    right: crop['ocr_right'] ?? -1,
    bottom: crop['ocr_bottom'] ?? -1,
  });
  via = 'raw frame + OcrService (no snapshot route)';
  return { text: read, ms: performance.now() - t1 };
}

/**
 * CPU ms of this process's children that have exited (cutime + cstime of /proc/self/stat): an
 * OCR answer's ffmpeg and tesseract, which exit before it comes (QEMU runs on and is not
 * counted). 10 ms steps.
 */
async function childrenCpuMs(): Promise<number> {
  const stat = await readFile('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
}

/** Lines with runs of blanks made one space, blank lines dropped. */
export function normalLines(text: string): string[] {
  return text
    .replace(/\r/g, '')
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter((l) => l !== '');
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const cur = [i];
    for (let j = 1; j <= b.length; j += 1) {
      cur[j] = Math.min(
        prev[j]! + 1,
        cur[j - 1]! + 1,
        prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** How well `ocr` reads `truth` (both normalised): character accuracy and exact lines in order. */
export function compare(ocr: string, truth: string): Omit<OcrFigures, 'ocr_ms' | 'ocr_cpu_ms'> {
  const got = normalLines(ocr);
  const want = normalLines(truth);
  const distance = editDistance(got.join('\n'), want.join('\n'));
  const total = Math.max(1, want.join('\n').length);
  // exact lines, in order (a greedy walk: an extra or missing line costs only itself)
  let exact = 0;
  let at = 0;
  for (const line of want) {
    const found = got.indexOf(line, at);
    if (found >= 0) {
      exact += 1;
      at = found + 1;
    }
  }
  return {
    ocr_char_accuracy: round(Math.max(0, 1 - distance / total), 4),
    ocr_lines_exact: exact,
    ocr_lines: want.length,
    ocr_match: exact === want.length && got.length === want.length ? 1 : 0,
  };
}

// Console-like text: words a shell, a kernel log and a listing show, mixed case, digits, signs.
const WORDS = (
  'the quick brown fox jumps over lazy dog Linux kernel eth0 link up Mbps full duplex mounted ' +
  'filesystem root user home config service started stopped network address gateway device ' +
  'storage partition volume remote keyboard mouse video screen serial console login password ' +
  'error warning info debug Ready Done Failed OK Starting Reached target System Time ' +
  'Synchronized Journal Daemon Update Manager Power Button Virtual Media Disk Image'
).split(' ');

/** `rows` lines of up to `cols` characters, the same every run (a fixed seed). */
export function screenLines(rows: number, cols: number): string[] {
  let seed = 13;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const lines: string[] = [];
  for (let r = 0; r < rows; r += 1) {
    let line = `${String(r + 1).padStart(2, '0')}:`;
    while (line.length < cols - 16) {
      const kind = next(10);
      const word = WORDS[next(WORDS.length)]!;
      if (kind === 0) line += ` ${next(100000)}`;
      else if (kind === 1) line += ` ${word},`;
      else if (kind === 2) line += ` ${word}.`;
      else if (kind === 3) line += ` (${word})`;
      else line += ` ${word}`;
    }
    lines.push(line);
  }
  return lines;
}

/** Writes `lines` to the guest's serial shell, one command per line. */
async function serialCommands(sockPath: string, lines: string[]): Promise<void> {
  const sock = connect(sockPath);
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', resolve);
    sock.once('error', reject);
  });
  // The shell reads line by line from the tty: a short pause keeps its input queue small.
  for (const line of lines) {
    sock.write(`${line}\n`);
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise<void>((r) => sock.end(r));
}

/**
 * The guest's own `screen` dump, checked against the md5 the guest prints after it: the serial
 * line has been seen to double a character (`Virtuual` where the screen shows `Virtual`), and
 * the bench's truth must be the screen's. A garbled dump is asked for again, up to 5 times.
 */
async function screenDump(dir: string, log: () => Promise<string>): Promise<string> {
  for (let attempt = 1; ; attempt += 1) {
    const before = (await log()).length;
    await serialCommands(join(dir, 'run', 'serial.sock'), ['screen']);
    const dump = await until(
      "the guest's screen dump",
      async () =>
        /screen begin \S+\n([\s\S]*?)\nscreen end\nscreen md5 ([0-9a-f]{32})\n/.exec(
          (await log()).slice(before),
        ),
      (m) => m !== null,
      30_000,
    );
    const [, text, sum] = dump!;
    if (createHash('md5').update(`${text!}\n`).digest('hex') === sum) return text!;
    note(`screen dump ${attempt} garbled on the serial line (md5 differs)`);
    if (attempt === 5) throw new Error("the guest's screen dump never came through intact");
  }
}

async function qemuFigures(): Promise<OcrFigures> {
  const s = await serve('qemu');
  try {
    const serial = join(s.dir, 'run', 'serial.log');
    const log = async (): Promise<string> =>
      (await readFile(serial, 'utf8').catch(() => '')).replace(/\r/g, '');
    await until('guest ready', log, (l) => l.includes('guest ready'), 180_000);
    // 128x48 text cells at 1024x768 (8x16 font): 44 lines of at most 100 characters.
    const lines = screenLines(44, 100);
    // the serial shell may not read yet right after `guest ready` (a loaded machine): wait for
    // it to answer (the arithmetic is done by the shell, so the typed line never matches)
    await until(
      'the serial shell',
      async () => {
        const before = (await log()).length;
        await serialCommands(join(s.dir, 'run', 'serial.sock'), ['echo ocr-$((6*7))']);
        await new Promise((r) => setTimeout(r, 1000));
        return (await log()).slice(before).includes('ocr-42');
      },
      (answered) => answered,
      60_000,
    );
    await serialCommands(join(s.dir, 'run', 'serial.sock'), [
      // clear tty1 and hide its cursor (the shell there keeps waiting at its prompt)
      "printf '\\033[2J\\033[H\\033[?25l' > /dev/tty1",
      ...lines.map((l) => `echo '${l}' > /dev/tty1`),
    ]);
    const truth = await screenDump(s.dir, log);
    const shown = normalLines(truth);
    if (shown.length !== lines.length) {
      throw new Error(`the guest shows ${shown.length} lines, not ${lines.length}:\n${truth}`);
    }
    // the picture follows the console within a frame or two
    await new Promise((r) => setTimeout(r, 1500));
    if (process.env['KVM_OCR_DUMP']) {
      const { writeFile } = await import('node:fs/promises');
      // the snapshot the OCR reads (the stream's JPEG quality), or the frame where there is none
      const snap = await fetch(`${s.base}/api/streamer/snapshot`, { headers: { token: s.token } });
      const jpeg = snap.ok ? Buffer.from(await snap.arrayBuffer()) : await rawJpeg(s);
      await writeFile(`${process.env['KVM_OCR_DUMP']}.jpg`, jpeg);
      await writeFile(`${process.env['KVM_OCR_DUMP']}.png`, await rawJpeg(s, true));
      await writeFile(`${process.env['KVM_OCR_DUMP']}.txt`, truth);
    }
    const times: number[] = [];
    const cpu: number[] = [];
    let result: Omit<OcrFigures, 'ocr_ms' | 'ocr_cpu_ms'> | null = null;
    for (let i = 0; i < SAMPLES; i += 1) {
      const c0 = await childrenCpuMs();
      const { text, ms } = await readScreen(s);
      cpu.push((await childrenCpuMs()) - c0);
      times.push(ms);
      const c = compare(text, truth);
      if (!result || c.ocr_char_accuracy < result.ocr_char_accuracy) result = c;
      if (i === 0) {
        const got = normalLines(text);
        normalLines(truth).forEach((want, n) => {
          if (got[n] !== want)
            note(
              `line ${n + 1}: screen ${JSON.stringify(want)}\n        ocr    ${JSON.stringify(got[n])}`,
            );
        });
      }
    }
    await serialCommands(join(s.dir, 'run', 'serial.sock'), ["printf '\\033[?25h' > /dev/tty1"]);
    note(`ocr via ${via}: ${times.map((t) => round(t)).join(', ')} ms`);
    note(`ocr CPU (ffmpeg + tesseract): ${cpu.join(', ')} ms`);
    return { ocr_ms: round(median(times)), ocr_cpu_ms: median(cpu), ...result! };
  } finally {
    await s.app.close();
    await rm(s.dir, { recursive: true, force: true });
  }
}

/**
 * Short mode: the testbed screen's label ("TEST TARGET", its 5x7 font at 4x, 64 pixels above
 * the bottom of the default 1280x720 picture), cropped as PiKVM's selection box would.
 */
async function testbedFigures(): Promise<OcrFigures> {
  const s = await serve('testbed');
  try {
    const label = 'TEST TARGET';
    const crop = { ocr_left: 16, ocr_top: 640, ocr_right: 400, ocr_bottom: 700 };
    const times: number[] = [];
    let result: Omit<OcrFigures, 'ocr_ms' | 'ocr_cpu_ms'> | null = null;
    for (let i = 0; i < SAMPLES; i += 1) {
      const { text, ms } = await readScreen(s, crop);
      times.push(ms);
      result = compare(text, label);
    }
    note(`ocr via ${via} (testbed): ${times.map((t) => round(t)).join(', ')} ms`);
    return { ocr_ms: round(median(times)), ...result! };
  } finally {
    await s.app.close();
    await rm(s.dir, { recursive: true, force: true });
  }
}

/** The OCR figures: the QEMU guest's text screen (the testbed's label in short mode). */
export async function ocrFigures(): Promise<OcrFigures> {
  return SHORT ? testbedFigures() : qemuFigures();
}

// `npm run bench -- ocr`: this part alone, with the machine's speed at the start and the end
// (lib.machineSpeed: a slower machine shows there, slower code does not)
if (process.argv[1]?.endsWith('ocr.mjs')) {
  const speed = machineSpeed();
  const figures = await ocrFigures();
  const end = machineSpeed();
  const calibration = {
    ...speed,
    calibration_end_ms: end.calibration_ms,
    calibration_cpu_end_ms: end.calibration_cpu_ms,
  };
  process.stdout.write(`${JSON.stringify({ ...runMarks(), ...figures, ...calibration })}\n`);
}
