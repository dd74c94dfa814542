/**
 * Pictures of known text for the OCR tests: lines drawn light on dark, as a console shows them,
 * by ffmpeg's drawtext with Debian's DejaVu Sans Mono (fonts-dejavu-core, in the test
 * bootstrap), as one JPEG.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const TEST_FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf';

export interface TextPicture {
  jpeg: Buffer;
  width: number;
  height: number;
  /** Each line's band in pixels: for crops. */
  lineBoxes: Array<{ left: number; top: number; right: number; bottom: number }>;
}

/** `lines` at `fontSize` pixels from (16, 16), one every 2 font sizes, on width x height. */
export async function textJpeg(
  lines: string[],
  opts: {
    width: number;
    height: number;
    fontSize?: number;
    /** Dark text on white (a GUI) instead of a console's light on black. */
    paper?: boolean;
    ffmpeg?: string;
  },
): Promise<TextPicture> {
  const { width, height } = opts;
  const size = opts.fontSize ?? 16;
  const step = size * 2;
  // Each line from a file of its own: drawtext's text= would need the filter escaping of ':'.
  const dir = await mkdtemp(join(tmpdir(), 'kvm-ocr-text-'));
  try {
    const filters: string[] = [];
    const lineBoxes: TextPicture['lineBoxes'] = [];
    for (const [i, line] of lines.entries()) {
      const file = join(dir, `line${i}.txt`);
      await writeFile(file, line);
      const top = 16 + i * step;
      filters.push(
        `drawtext=fontfile=${TEST_FONT}:textfile=${file}:fontsize=${size}:fontcolor=${opts.paper ? '0x202020' : '0xd0d0d0'}:x=16:y=${top}`,
      );
      lineBoxes.push({
        left: 16,
        top,
        right: Math.min(width, 16 + line.length * size),
        bottom: top + Math.ceil(size * 1.25),
      });
    }
    const jpeg = await new Promise<Buffer>((resolve, reject) => {
      execFile(
        opts.ffmpeg ?? 'ffmpeg',
        [
          '-hide_banner',
          '-loglevel',
          'error',
          '-f',
          'lavfi',
          '-i',
          `color=c=${opts.paper ? 'white' : 'black'}:s=${width}x${height}`,
        ]
          .concat(['-vf', filters.join(','), '-frames:v', '1', '-pix_fmt', 'yuvj420p', '-q:v', '4'])
          .concat(['-f', 'mjpeg', 'pipe:1']),
        { encoding: 'buffer', timeout: 20_000, maxBuffer: 32 * 1024 * 1024 },
        (err, stdout) => (err ? reject(err) : resolve(stdout)),
      );
    });
    return { jpeg, width, height, lineBoxes };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
