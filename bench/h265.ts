/**
 * `npm run bench -- h265`: what H.265 saves over H.264 at equal quality, on the testbed's screen.
 *
 * Frames: the testbed's picture (server/src/platform/testbed/screen.ts) at 1280x720 yuv420p,
 * FRAMES frames at 30 fps drawn as the testbed source draws them (frame counter, animation),
 * with two characters typed every third frame (the text line and the change marker move):
 * written once to a raw file, so both encoders get the very same frames.
 *
 * Encoders: the product's own ffmpeg command lines (media/encoder.ts `ffmpegArgs`, processing
 * quality_first: x264 veryfast Constrained Baseline / x265 veryfast Main, zerolatency, GOP 30),
 * with two changes: the output is a raw elementary stream file instead of the pipe, and the
 * rate control is constant quality (`-crf`) instead of the bitrate cap. In bitrate mode neither
 * encoder spends its target on this screen (measured: x264 at a 2000 kbit/s target made
 * 68 kbit/s, SSIM 0.9988, saturated), so equal quality is found on the quality scale:
 * - H.264 at an anchor CRF (23, x264's default; and 30, a visibly softer picture):
 *   `h264_kbps` is the stream's bytes × 8 / (frames / 30 fps), in kbit/s; `h264_ssim` is
 *   ffmpeg's ssim filter ("All", 4:2:0 weighted) of the decoded stream against the source,
 *   frame n against frame n.
 * - H.265: its CRF is bisected over 0..51 (integers) for the highest (fewest bits) whose SSIM is
 *   at least `h264_ssim`; `h265_kbps` and `h265_ssim` are measured on that encode as above, so
 *   `h265_ssim` >= `h264_ssim`, never interpolated; `h265_crf` is that CRF. `h265_matched` is
 *   1, or 0 when even CRF 0 does not reach the SSIM (then CRF 0's figures are given).
 * - `h265_bitrate_ratio` = h265_kbps / h264_kbps at anchor CRF 23; the `_crf30` fields are the
 *   same at anchor 30.
 * - `h264_encode_fps` / `h265_encode_fps`: frames / wall time of the anchor's H.264 encode and
 *   of the matched H.265 encode (ffmpeg's start included): the CPU price on this machine, next
 *   to the load in `load_1m`.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffmpegArgs } from '../server/src/media/encoder';
import { TestbedPicture } from '../server/src/platform/testbed/screen';
import { machineSpeed, note, round, runMarks, sized } from './lib';

const WIDTH = 1280;
const HEIGHT = 720;
const FPS = 30;
const FRAMES = sized(90, 30);
/** x264 CRFs the H.264 side is encoded at. */
const ANCHORS = sized([23, 30], [23]);

/**
 * Frames paired by their index: a raw elementary stream has no timestamps, and by the ones
 * ffmpeg makes up the ssim filter paired a decoded frame with its neighbour (lossless x264 read
 * as SSIM 0.9988 instead of 1).
 */
const PAIRED_SSIM = '[0:v]settb=1/30,setpts=N[a];[1:v]settb=1/30,setpts=N[b];[a][b]ssim';

interface Encode {
  kbps: number;
  ssim: number;
  fps: number;
}

function run(args: string[], stdinFile?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('ffmpeg', args, {
      stdio: [stdinFile ? 'pipe' : 'ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(err) : reject(new Error(`ffmpeg ${code}: ${err.slice(-400)}`)),
    );
    if (stdinFile && child.stdin) {
      void open(stdinFile).then((fh) => {
        const stream = fh.createReadStream();
        stream.pipe(child.stdin!);
        stream.on('close', () => void fh.close());
      });
    }
  });
}

async function encode(
  dir: string,
  raw: string,
  codec: 'h264' | 'h265',
  crf: number,
): Promise<Encode> {
  const product = ffmpegArgs({
    width: WIDTH,
    height: HEIGHT,
    format: 'yuv420p',
    fps: FPS,
    bitrateKbps: 2000,
    gop: 30,
    processing: 'quality_first',
    codec,
  });
  // -b:v, -maxrate and -bufsize (6 arguments) become -crf: constant quality
  const rate = product.indexOf('-b:v');
  const args = [...product.slice(0, rate), '-crf', String(crf), ...product.slice(rate + 6)];
  const out = join(dir, `out.${codec}`);
  // the product's command line; the output a raw elementary stream file instead of the pipe
  const t0 = performance.now();
  await run([...args.slice(0, -3), '-f', codec === 'h265' ? 'hevc' : 'h264', '-y', out], raw);
  const seconds = (performance.now() - t0) / 1000;
  const bytes = (await stat(out)).size;
  const log = await run([
    ...['-hide_banner', '-nostats', '-framerate', String(FPS), '-i', out],
    ...['-f', 'rawvideo', '-pix_fmt', 'yuv420p', '-s', `${WIDTH}x${HEIGHT}`],
    ...['-framerate', String(FPS), '-i', raw, '-lavfi', PAIRED_SSIM, '-f', 'null', '-'],
  ]);
  const m = / All:([\d.]+)/.exec(log);
  if (!m) throw new Error(`no SSIM in ffmpeg's output: ${log.slice(-300)}`);
  return {
    kbps: (bytes * 8) / (FRAMES / FPS) / 1000,
    ssim: Number(m[1]),
    fps: FRAMES / seconds,
  };
}

async function frames(file: string): Promise<void> {
  const picture = new TestbedPicture(WIDTH, HEIGHT);
  const fh = await open(file, 'w');
  try {
    for (let n = 1; n <= FRAMES; n += 1) {
      if (n % 3 === 0) picture.typeText(String.fromCharCode(65 + (n % 26), 97 + (n % 26)), n);
      picture.drawFrameNumber(n);
      picture.animate();
      await fh.write(picture.frame);
    }
  } finally {
    await fh.close();
  }
}

/** The highest H.265 CRF (bisected, integers) whose SSIM reaches `ssim`. */
async function matchH265(dir: string, raw: string, ssim: number) {
  let good = 0; // SSIM reached (assumed, checked below)
  let bad = 52; // not reached
  let best: Encode | null = null;
  while (bad - good > 1) {
    const mid = Math.floor((good + bad) / 2);
    const e = await encode(dir, raw, 'h265', mid);
    note(`h265 crf ${mid}: ${round(e.kbps)} kbit/s ssim ${e.ssim}`);
    if (e.ssim >= ssim) {
      good = mid;
      best = e;
    } else bad = mid;
  }
  if (best) return { ...best, crf: good, matched: true };
  return { ...(await encode(dir, raw, 'h265', 0)), crf: 0, matched: false };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'kvm-bench-h265-'));
  try {
    const raw = join(dir, 'frames.yuv');
    await frames(raw);
    const figures: Record<string, number> = {};
    for (const anchor of ANCHORS) {
      const suffix = anchor === 23 ? '' : `_crf${anchor}`;
      const h264 = await encode(dir, raw, 'h264', anchor);
      note(`h264 crf ${anchor}: ${round(h264.kbps)} kbit/s ssim ${h264.ssim}`);
      const h265 = await matchH265(dir, raw, h264.ssim);
      Object.assign(figures, {
        [`h265_bitrate_ratio${suffix}`]: round(h265.kbps / h264.kbps, 3),
        [`h264_kbps${suffix}`]: round(h264.kbps),
        [`h265_kbps${suffix}`]: round(h265.kbps),
        [`h264_ssim${suffix}`]: h264.ssim,
        [`h265_ssim${suffix}`]: h265.ssim,
        [`h265_crf${suffix}`]: h265.crf,
        [`h265_matched${suffix}`]: h265.matched ? 1 : 0,
        [`h264_encode_fps${suffix}`]: round(h264.fps),
        [`h265_encode_fps${suffix}`]: round(h265.fps),
      });
    }
    process.stdout.write(
      `${JSON.stringify({ ...runMarks(), frames: FRAMES, ...figures, ...machineSpeed() })}\n`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
