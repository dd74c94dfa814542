/**
 * Issue 13's figures for the JPEG path, against a running server (testbed target, 1280x720 at
 * 30 fps): `snapshot_ms`, the p50 of `GET /api/streamer/snapshot` taken one after another
 * (warm: the first one, which starts capture and ffmpeg, is not counted; 100 ms apart, so
 * each is of a new frame and encodes it; p50 <= 50), and
 * `mjpeg_fps`, the pictures one `/streamer/stream` client receives a second over ~5 s (>= 25).
 * With them helper C's `ocr_ms` and its accuracy fields (bench/ocr.ts: the QEMU guest's text
 * console read back against its screen dump; a testbed line in short mode). Prints one JSON
 * object.
 */
import { get } from 'node:http';
import { ServerProcess } from '../e2e/fixtures/server';
import { median, note, percentile, round, runMarks, sized } from './lib';
import { ocrFigures } from './ocr';
import { benchLogin } from './terminal';

const SNAPSHOTS = sized(100, 15);
const MJPEG_MS = sized(5_000, 2_000);
const BOUNDARY = Buffer.from('\r\n--boundarydonotcross\r\n');

async function snapshotTimes(server: ServerProcess, token: string): Promise<number[]> {
  const once = async (): Promise<number> => {
    const t0 = performance.now();
    const res = await fetch(`${server.url}/api/streamer/snapshot`, { headers: { token } });
    const body = Buffer.from(await res.arrayBuffer());
    const ms = performance.now() - t0;
    if (res.status !== 200 || body[0] !== 0xff || body[1] !== 0xd8)
      throw new Error(`snapshot: HTTP ${res.status}`);
    return ms;
  };
  await once(); // cold: capture and ffmpeg start
  const times: number[] = [];
  for (let i = 0; i < SNAPSHOTS; i += 1) {
    // past a frame interval: each snapshot is of a new frame, so each one encodes
    await new Promise((r) => setTimeout(r, 100));
    times.push(await once());
  }
  return times;
}

/** Pictures a second one MJPEG client receives, counted by part boundaries after the first. */
function mjpegFps(server: ServerProcess, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = get(
      `${server.url}/streamer/stream?key=bench`,
      { headers: { cookie: `auth_token=${token}` } },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`stream: HTTP ${res.statusCode}`));
          return;
        }
        let tail = Buffer.alloc(0);
        let parts = 0;
        let t0 = 0;
        res.on('data', (chunk: Buffer) => {
          const buf = Buffer.concat([tail, chunk]);
          let i = buf.indexOf(BOUNDARY);
          while (i >= 0) {
            if (parts === 0 && t0 === 0) t0 = performance.now();
            else parts += 1;
            i = buf.indexOf(BOUNDARY, i + BOUNDARY.length);
          }
          tail = buf.subarray(Math.max(0, buf.length - BOUNDARY.length + 1));
        });
        setTimeout(() => {
          const secs = (performance.now() - t0) / 1000;
          req.destroy();
          resolve(t0 > 0 ? parts / secs : 0);
        }, MJPEG_MS + 1_000);
      },
    );
    req.on('error', (err) => {
      if (!req.destroyed) reject(err);
    });
  });
}

export async function snapshotFigures(): Promise<Record<string, number>> {
  const server = await ServerProcess.start({ target: 'testbed' });
  try {
    const token = await benchLogin(server, 'benchpass');
    const times = await snapshotTimes(server, token);
    note(
      `snapshot: min ${round(Math.min(...times), 2)} ms, max ${round(Math.max(...times), 2)} ms`,
    );
    // the snapshot path's capture and ffmpeg go idle before the stream is measured
    const fps = await mjpegFps(server, token);
    return {
      snapshot_ms: round(median(times), 2),
      snapshot_p95_ms: round(percentile(times, 95), 2),
      snapshot_samples: times.length,
      mjpeg_fps: round(fps, 1),
    };
  } finally {
    await server.dispose();
  }
}

if (process.argv[1]?.endsWith('snapshot.mjs')) {
  const figures = await snapshotFigures();
  const ocr = await ocrFigures();
  process.stdout.write(`${JSON.stringify({ ...runMarks(), ...figures, ...ocr })}\n`);
}
