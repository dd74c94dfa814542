/**
 * OCR with the real tesseract and ffmpeg on pictures of known text (DejaVu Sans Mono), kvmd's
 * crop rules, tesseract missing, and the queue and timeout with a fake tesseract (a script)
 * standing in for a slow one. kvmd's argument checks: routes/ocr-query.test.ts.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cropBox,
  darkOnLight,
  hocrText,
  jpegSize,
  OcrBusyError,
  OcrError,
  OcrService,
  type OcrRequest,
} from './ocr-service';
import { textJpeg, type TextPicture } from './test-image';

const LINES = [
  'root@pikvm:~# ls -la /etc/kvmd',
  'The quick brown fox jumps over 13 lazy dogs.',
  'Linux 6.1.0-28-amd64: carrier up, 1000 Mbps (full duplex)',
];
const WHOLE: OcrRequest = { langs: [], left: -1, top: -1, right: -1, bottom: -1 };

/** Lines of an OCR answer, spaces collapsed, blank lines dropped. */
function lines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter((l) => l !== '');
}

let dir: string;
let pic: TextPicture;
let jpeg: Buffer;
const ocr = new OcrService();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-ocr-'));
  pic = await textJpeg(LINES, { width: 640, height: 480 });
  jpeg = pic.jpeg;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('cropBox (kvmd crop rules)', () => {
  const box = (left: number, top: number, right: number, bottom: number) =>
    cropBox(1024, 768, { langs: [], left, top, right, bottom });

  it('no edge set: the whole picture', () => {
    expect(box(-1, -1, -1, -1)).toEqual({ x: 0, y: 0, w: 1024, h: 768 });
  });

  it('unset edges are the picture edges; set ones are clamped to it', () => {
    expect(box(100, -1, -1, -1)).toEqual({ x: 100, y: 0, w: 924, h: 768 });
    expect(box(-1, 50, 2000, 5000)).toEqual({ x: 0, y: 50, w: 1024, h: 718 });
    expect(box(10, 20, 30, 40)).toEqual({ x: 10, y: 20, w: 20, h: 20 });
  });

  it('an empty or inverted box is the whole picture', () => {
    expect(box(300, 0, 200, 100)).toEqual({ x: 0, y: 0, w: 1024, h: 768 });
    expect(box(5000, 5000, -1, -1)).toEqual({ x: 0, y: 0, w: 1024, h: 768 });
    expect(box(10, 10, 10, 20)).toEqual({ x: 0, y: 0, w: 1024, h: 768 });
  });
});

describe('jpegSize', () => {
  it('reads the frame header of a JPEG, null for anything else', () => {
    expect(jpegSize(jpeg)).toEqual({ width: 640, height: 480 });
    expect(jpegSize(Buffer.from('not a jpeg'))).toBeNull();
    expect(jpegSize(jpeg.subarray(0, 20))).toBeNull();
  });
});

describe('hocrText', () => {
  // a 20x10 light picture: the glyph box at x 0..9 has a dark centre (a marked zero), the one
  // at x 10..19 is hollow (a capital O)
  const width = 20;
  const height = 10;
  const pixels = Buffer.alloc(width * height, 255);
  for (let y = 3; y <= 6; y += 1) for (let x = 3; x <= 6; x += 1) pixels[y * width + x] = 0;
  const pgm = Buffer.concat([Buffer.from(`P5\n${width} ${height}\n255\n`), pixels]);
  const glyph = (c: string, x: number) =>
    `<span class='ocrx_cinfo' title='x_bboxes ${x} 0 ${x + 9} 9; x_conf 90'>${c}</span>`;
  const line = (...words: string[]) =>
    `<span class='ocr_line' title='bbox 0 0 19 9'>${words
      .map((w) => `<span class='ocrx_word' title='bbox 0 0 19 9'>${w}</span>`)
      .join(' ')}</span>`;

  it("reads an O with a marked centre as the font's zero, never a zero as O", () => {
    const hocr =
      `<div class='ocr_page'><p class='ocr_par'>` +
      line(glyph('e', 10) + glyph('O', 0), glyph('O', 10) + glyph('K', 20)) +
      line(glyph('0', 10), glyph('&amp;', 10) + glyph('&lt;', 20)) +
      `</p><p class='ocr_par'>` +
      line(glyph('x', 10)) +
      `</p></div>`;
    expect(hocrText(hocr, pgm)).toBe('e0 OK\n0 &<\n\nx\n');
  });

  it('reads a ? drawn in one piece as 7, and one with a detached dot as ?', () => {
    // 10x12: x 0..4 a 7 (a bar and a stem to the bottom), x 5..9 a ? (a hook, a blank row, a dot)
    const w = 10;
    const px = Buffer.alloc(w * 12, 255);
    for (let x = 0; x <= 4; x += 1) px[1 * w + x] = 0;
    for (let y = 2; y <= 10; y += 1) px[y * w + 3] = 0;
    for (let x = 5; x <= 9; x += 1) px[1 * w + x] = 0;
    for (let y = 2; y <= 6; y += 1) px[y * w + 8] = 0;
    px[9 * w + 7] = 0;
    px[10 * w + 7] = 0;
    const sevens = Buffer.concat([Buffer.from(`P5\n${w} 12\n255\n`), px]);
    const g = (c: string, x0: number) =>
      `<span class='ocrx_cinfo' title='x_bboxes ${x0} 0 ${x0 + 4} 11; x_conf 90'>${c}</span>`;
    const hocr =
      `<div class='ocr_page'><p class='ocr_par'>` +
      line(g('2', 10) + g('?', 0) + g(':', 15), g('why', 10) + g('?', 5)) +
      `</p></div>`;
    expect(hocrText(hocr, sevens)).toBe('27: why?\n');
  });

  it('drops a glyph whose box lies largely over the one before it (one glyph read twice)', () => {
    const at = (c: string, x0: number, x1: number) =>
      `<span class='ocrx_cinfo' title='x_bboxes ${x0} 0 ${x1} 9; x_conf 90'>${c}</span>`;
    const hocr =
      `<div class='ocr_page'><p class='ocr_par'>` +
      // `l` 10 wide, `]` 8 wide over its last 4 pixels; `r` `n` touching by 1 pixel stay
      line(at('e', 0, 8) + at('l', 10, 20) + at(']', 16, 24), at('r', 30, 38) + at('n', 37, 45)) +
      // a narrow reading first, then the whole glyph over it: the whole one stays
      line(at('1', 50, 54) + at('4', 50, 60)) +
      `</p></div>`;
    expect(hocrText(hocr, pgm)).toBe('el rn\n4\n');
  });

  it('is empty for a page without words', () => {
    expect(hocrText("<div class='ocr_page'></div>", pgm)).toBe('');
  });
});

describe('darkOnLight', () => {
  const pgm = (pixels: number[]) =>
    Buffer.concat([Buffer.from(`P5\n${pixels.length} 1\n255\n`), Buffer.from(pixels)]);

  it('inverts a mostly dark picture, keeps a light one', () => {
    expect([...darkOnLight(pgm([0, 10, 250, 20])).subarray(-4)]).toEqual([255, 245, 5, 235]);
    expect([...darkOnLight(pgm([255, 240, 10, 250])).subarray(-4)]).toEqual([255, 240, 10, 250]);
  });

  it('leaves what is not a binary PGM alone', () => {
    expect(darkOnLight(Buffer.from('P2 1 1 255 0'))).toEqual(Buffer.from('P2 1 1 255 0'));
  });
});

describe('OcrService with tesseract', () => {
  it('lists the installed languages, eng among them, and eng as the default', async () => {
    const state = await ocr.state();
    expect(state.enabled).toBe(true);
    expect(state.langs.available).toContain('eng');
    expect(state.langs.available).not.toContain('osd');
    expect(state.langs.default).toEqual(['eng']);
    expect(await ocr.languages()).toEqual({
      available: state.langs.available,
      default: ['eng'],
    });
  });

  it('reads a picture of known text back exactly', async () => {
    expect(lines(await ocr.recognize(jpeg, WHOLE))).toEqual(LINES);
  });

  it('reads only the crop', async () => {
    const b = pic.lineBoxes[1]!;
    const req = {
      langs: ['eng'],
      left: b.left - 4,
      top: b.top - 4,
      right: b.right + 4,
      bottom: b.bottom + 4,
    };
    expect(lines(await ocr.recognize(jpeg, req))).toEqual([LINES[1]]);
  });

  it('clamps a crop past the picture and ignores an empty one', async () => {
    const b = pic.lineBoxes[2]!;
    const past = { langs: [], left: -1, top: b.top - 4, right: 99_999, bottom: 99_999 };
    expect(lines(await ocr.recognize(jpeg, past))).toEqual([LINES[2]]);
    const empty = { langs: [], left: 400, top: 400, right: 100, bottom: 100 };
    expect(lines(await ocr.recognize(jpeg, empty))).toEqual(LINES);
  });

  it('reads dark text on a light background as well', async () => {
    const paper = await textJpeg(LINES, { width: 640, height: 480, paper: true });
    expect(lines(await ocr.recognize(paper.jpeg, WHOLE))).toEqual(LINES);
  });

  it('refuses a language that is not installed, with kvmd message', async () => {
    await expect(ocr.recognize(jpeg, { ...WHOLE, langs: ['eng', 'xyz'] })).rejects.toThrow(
      "Failed sub-validator on one of the item of ['eng', 'xyz']",
    );
  });

  it('refuses what is not a JPEG', async () => {
    const err = await ocr.recognize(Buffer.from('GIF89a...'), WHOLE).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OcrError);
    expect((err as OcrError).status).toBe(400);
  });
});

describe('OcrService without tesseract', () => {
  const missing = new OcrService({ env: { ...process.env, PATH: '/nonexistent' } });

  it('is disabled with empty lists', async () => {
    expect(await missing.state()).toEqual({
      enabled: false,
      langs: { default: [], available: [] },
    });
  });

  it("answers kvmd's OcrError", async () => {
    const err = await missing.recognize(jpeg, WHOLE).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OcrError);
    expect(err).toMatchObject({
      status: 400,
      wireName: 'OcrError',
      message: 'Tesseract is not available',
    });
  });

  it('sends the ocr event with enabled false', async () => {
    expect(await missing.provider().snapshot()).toEqual([
      { event_type: 'ocr', event: { enabled: false, langs: { default: [], available: [] } } },
    ]);
  });
});

describe('OcrService limits (a slow fake tesseract)', () => {
  async function fake(sleepS: number): Promise<string> {
    // hOCR as tesseract writes it with hocr_char_boxes: two words of one line
    const word = (w: string) =>
      `<span class='ocrx_word' title='bbox 0 0 9 9'>` +
      [...w]
        .map(
          (c, i) =>
            `<span class='ocrx_cinfo' title='x_bboxes ${i * 2} 0 ${i * 2 + 1} 1; x_conf 99'>${c}</span>`,
        )
        .join('') +
      '</span>';
    const FAKE_HOCR = `<p class='ocr_par'><span class='ocr_line' title='bbox 0 0 9 9'>${word('FAKE')} ${word('TEXT')}</span></p>`;
    const path = join(dir, `tesseract-${sleepS}`);
    await writeFile(
      path,
      [
        '#!/bin/sh',
        'if [ "$1" = "--list-langs" ]; then',
        '  echo \'List of available languages in "/x/" (1):\'; echo eng; exit 0',
        'fi',
        'cat >/dev/null',
        // a stuck one is the sleep itself, so the kill leaves nothing behind
        sleepS >= 10 ? `exec sleep ${sleepS}` : `sleep ${sleepS}; echo "${FAKE_HOCR}"`,
      ].join('\n'),
    );
    await chmod(path, 0o755);
    return path;
  }

  it('runs one at a time, lets four wait and refuses the next with 409', async () => {
    const slow = new OcrService({ tesseract: await fake(0.3) });
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, () => slow.recognize(jpeg, WHOLE)),
    );
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(1);
    expect((refused[0] as PromiseRejectedResult).reason).toBeInstanceOf(OcrBusyError);
    expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({ status: 409 });
    expect(results.filter((r) => r.status === 'fulfilled').map((r) => r.value)).toEqual(
      Array(5).fill('FAKE TEXT\n'),
    );
    // the queue drained: another runs
    expect(await slow.recognize(jpeg, WHOLE)).toBe('FAKE TEXT\n');
  });

  it('kills a recognition past its time limit', async () => {
    const stuck = new OcrService({ tesseract: await fake(30), timeoutMs: 300 });
    const t0 = performance.now();
    await expect(stuck.recognize(jpeg, WHOLE)).rejects.toThrow('OCR timed out');
    expect(performance.now() - t0).toBeLessThan(5000);
  });
});
