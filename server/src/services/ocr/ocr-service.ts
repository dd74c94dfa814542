/**
 * Text of the remote screen (kvmd's `ocr`, 4.82 through 4.2xx): Debian's tesseract-ocr, offline.
 *
 * A JPEG frame is cropped (kvmd's rules: a negative edge is "not set", edges are clamped to the
 * picture, an empty box means the whole picture), turned gray and scaled up 2x by ffmpeg, then
 * read by the `tesseract` command. Both run with process/run's runner, a timeout and one thread each (the
 * device has few cores and the encoder needs them); one recognition runs at a time and a few
 * wait, more are refused (409) rather than queued without end.
 *
 * Without a working `tesseract`, OCR is `enabled: false` and a request answers kvmd's
 * `OcrError` "Tesseract is not available".
 */
import type { RawFrame } from '../../drivers/video/types';
import type { StateProvider } from '../../ws/state-registry';
import { BadRequestError, IsBusyError, ValidatorError } from '../../errors';
import { CommandError, runCommandBuffer } from '../../process/run';
import { SerialQueue } from '../../sync/serial-queue';

/** kvmd's OcrError (an OperationError: 400). */
export class OcrError extends BadRequestError {}

/** Too many recognitions already waiting. */
export class OcrBusyError extends IsBusyError {
  static override readonly defaultMessage = 'Too many OCR requests are running; try again later';
}

/** What to read (parsed from kvmd's `ocr_*` arguments by routes/ocr.ts). */
export interface OcrRequest {
  /** Tesseract language names; empty: the defaults. */
  langs: string[];
  /** Crop edges in pixels; negative: that edge is not set. */
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** The answer of `GET /api/streamer/ocr` and the `ocr` event (kvmd's `Ocr.get_state()`). */
export interface OcrState {
  enabled: boolean;
  langs: { default: string[]; available: string[] };
}

/** Limits of one request (docs/security.md). */
export const OCR_LIMITS = {
  /** `ocr_langs` characters and names. */
  langsChars: 256,
  langs: 8,
  /** The JPEG handed in. */
  imageBytes: 16 * 1024 * 1024,
  /** Its picture (before the 2x scale). */
  imagePixels: 4096 * 2160,
  /** One recognition running, this many waiting. */
  queue: 4,
  /** Each of ffmpeg and tesseract. */
  timeoutMs: 20_000,
} as const;

/** Names tesseract uses (eng, chi_sim, deu_latf); refuses paths and options. */
export const OCR_LANG_NAME = /^[a-z0-9_]{1,32}$/;

/** kvmd's message for a list with an unknown item (Python's repr of the list). */
export function langsError(langs: string[]): ValidatorError {
  const repr = `[${langs.map((l) => `'${l.replace(/[\\']/g, (c) => `\\${c}`)}'`).join(', ')}]`;
  return new ValidatorError(`Failed sub-validator on one of the item of ${repr}`);
}

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** kvmd's crop rules: unset edges are the picture's, set ones clamped; an empty box: no crop. */
export function cropBox(width: number, height: number, req: OcrRequest): Box {
  const whole = { x: 0, y: 0, w: width, h: height };
  const { left, top, right, bottom } = req;
  if (left < 0 && top < 0 && right < 0 && bottom < 0) return whole;
  const l = left < 0 ? 0 : Math.min(width, left);
  const t = top < 0 ? 0 : Math.min(height, top);
  const r = right < 0 ? width : Math.min(width, right);
  const b = bottom < 0 ? height : Math.min(height, bottom);
  if (l >= r || t >= b) return whole;
  return { x: l, y: t, w: r - l, h: b - t };
}

/** A JPEG's size from its frame header (SOFn), or null when it is not a JPEG. */
export function jpegSize(data: Buffer): { width: number; height: number } | null {
  if (data.length < 4 || data[0] !== 0xff || data[1] !== 0xd8) return null;
  let i = 2;
  while (i + 9 < data.length) {
    if (data[i] !== 0xff) return null;
    const marker = data[i + 1]!;
    if (marker === 0xff) {
      i += 1; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2;
      continue;
    }
    const len = data.readUInt16BE(i + 2);
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      const height = data.readUInt16BE(i + 5);
      const width = data.readUInt16BE(i + 7);
      return width > 0 && height > 0 ? { width, height } : null;
    }
    if (marker === 0xda || len < 2) return null; // scan data before a frame header
    i += 2 + len;
  }
  return null;
}

/**
 * A binary PGM (ffmpeg's `pgm`) made dark text on a light background when it is mostly dark (a
 * console): tesseract's model reads that better, and it would otherwise try the picture both
 * ways (bench/ocr.ts, the guest console: 1.6 s instead of 2.9 s, 33 of 44 lines exact, not 32).
 * Changes `pgm` in place.
 */
export function darkOnLight(pgm: Buffer): Buffer {
  // header: "P5" width height maxval, each followed by one whitespace byte
  let at = 0;
  for (let field = 0; field < 4; field += 1) {
    while (at < pgm.length && /\s/.test(String.fromCharCode(pgm[at]!))) at += 1;
    while (at < pgm.length && !/\s/.test(String.fromCharCode(pgm[at]!))) at += 1;
  }
  at += 1;
  if (pgm[0] !== 0x50 || pgm[1] !== 0x35 || at >= pgm.length) return pgm;
  let sum = 0;
  let n = 0;
  for (let i = at; i < pgm.length; i += 7) {
    sum += pgm[i]!;
    n += 1;
  }
  if (sum / n >= 128) return pgm;
  for (let i = at; i < pgm.length; i += 1) pgm[i] = 255 - pgm[i]!;
  return pgm;
}

/** A binary PGM's size and where its pixels start; null for anything else. */
export function pgmPixels(pgm: Buffer): { width: number; height: number; at: number } | null {
  const fields: number[] = [];
  let at = 2;
  if (pgm[0] !== 0x50 || pgm[1] !== 0x35) return null;
  while (fields.length < 3 && at < pgm.length) {
    while (at < pgm.length && /\s/.test(String.fromCharCode(pgm[at]!))) at += 1;
    const start = at;
    while (at < pgm.length && /\d/.test(String.fromCharCode(pgm[at]!))) at += 1;
    if (at === start) return null;
    fields.push(Number(pgm.subarray(start, at).toString('ascii')));
  }
  at += 1;
  const [width, height] = fields as [number, number];
  if (fields.length < 3 || at + width * height > pgm.length) return null;
  return { width, height, at };
}

/**
 * How much ink the middle of a glyph box holds, 0..1, on the dark-on-light picture. A console
 * or BIOS font marks its zero (a slash or a dot inside); its capital O is hollow.
 */
function centreInk(pgm: Buffer, px: { width: number; at: number }, box: number[]): number {
  const [x0, y0, x1, y1] = box as [number, number, number, number];
  const fx = (x1 - x0) * 0.35;
  const fy = (y1 - y0) * 0.35;
  let n = 0;
  let ink = 0;
  for (let y = Math.round(y0 + fy); y <= Math.round(y1 - fy); y += 1) {
    for (let x = Math.round(x0 + fx); x <= Math.round(x1 - fx); x += 1) {
      const v = pgm[px.at + y * px.width + x];
      if (v === undefined) continue;
      n += 1;
      ink += 255 - v;
    }
  }
  return n === 0 ? 0 : ink / n / 255;
}

/**
 * Whether a glyph box's ink is one piece from top to bottom: no row between its first and last
 * inked rows is blank. A question mark's dot is apart from its hook in every font; a console
 * font's 7 (a flat top and a long stem) is one stroke.
 */
function unbrokenInk(pgm: Buffer, px: { width: number; at: number }, box: number[]): boolean {
  const [x0, y0, x1, y1] = box as [number, number, number, number];
  const inked: boolean[] = [];
  for (let y = y0; y <= y1; y += 1) {
    let ink = false;
    for (let x = x0; x <= x1 && !ink; x += 1) {
      const v = pgm[px.at + y * px.width + x];
      ink = v !== undefined && v < INK_LEVEL;
    }
    inked.push(ink);
  }
  const first = inked.indexOf(true);
  const last = inked.lastIndexOf(true);
  return first >= 0 && inked.slice(first, last + 1).every(Boolean);
}

/**
 * Whether glyph `b` is glyph `a` read a second time: their boxes overlap by at least 40% of the
 * narrower one. tesseract does this on a console font (bench/ocr.ts: `kernel]` for `kernel`, the
 * l's foot read again as `]`, the boxes 10 and 8 pixels wide overlapping by 4; `O08` for `08`, a
 * 6-pixel `0` over the zero's right edge and the gap after it). Separate glyphs of a text,
 * kerned pairs included, overlap far less.
 */
function readTwice(a: number[], b: number[]): boolean {
  const overlap = Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!);
  const narrower = Math.min(a[2]! - a[0]!, b[2]! - b[0]!);
  return narrower > 0 && overlap * 5 >= narrower * 2;
}

/** A pixel darker than this is ink (dark-on-light, 0..255). */
const INK_LEVEL = 128;

/** Above this a glyph read as `O` has a marked centre: it is the font's zero. */
const MARKED_ZERO_INK = 0.1;

const HOCR_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  '#39': "'",
};

/**
 * tesseract's hOCR (with `hocr_char_boxes`) as the plain text it would have printed: words
 * joined by a space, lines by a newline, paragraphs by an empty line. On the way, what
 * tesseract's model gets wrong in a console font is read from the picture instead:
 * - an `O` whose centre is marked becomes `0` (bench/ocr.ts: `eth0` read as `ethO`);
 * - a `?` whose ink is one piece (no detached dot) becomes `7` (`27:` read as `2?:`);
 * - a glyph whose box lies largely over the previous one's is that glyph read twice: the
 *   narrower reading goes (`kernel]`, `O08`).
 * Never the other way: a hollow zero or a real question mark is left as read.
 */
export function hocrText(hocr: string, pgm: Buffer): string {
  const px = pgmPixels(pgm);
  const paragraphs: string[][][] = [];
  let prev: { box: number[]; text: string } | null = null;
  const tag = /<(?:span|p|div) class='(\w+)'([^>]*)>([^<]*)/g;
  for (const m of hocr.matchAll(tag)) {
    const kind = m[1]!;
    if (kind === 'ocr_par') paragraphs.push([]);
    else if (/^ocr_(line|textfloat|header|caption)$/.test(kind)) {
      if (paragraphs.length === 0) paragraphs.push([]);
      paragraphs[paragraphs.length - 1]!.push([]);
    } else if (kind === 'ocrx_word') {
      paragraphs.at(-1)?.at(-1)?.push('');
      prev = null;
    } else if (kind === 'ocrx_cinfo') {
      const line = paragraphs.at(-1)?.at(-1);
      if (!line || line.length === 0) continue;
      let c = m[3]!.replace(/&(amp|lt|gt|quot|apos|#39);/g, (_, e: string) => HOCR_ENTITIES[e]!);
      const box = /x_bboxes (\d+) (\d+) (\d+) (\d+)/.exec(m[2]!);
      const bounds = box?.slice(1).map(Number);
      if (c === 'O' && bounds && px && centreInk(pgm, px, bounds) > MARKED_ZERO_INK) c = '0';
      if (c === '?' && bounds && px && unbrokenInk(pgm, px, bounds)) c = '7';
      const word = line[line.length - 1]!;
      if (prev && bounds && readTwice(prev.box, bounds)) {
        // one glyph read twice: the wider reading is the glyph, the narrower a part of it
        if (bounds[2]! - bounds[0]! <= prev.box[2]! - prev.box[0]!) continue;
        line[line.length - 1] = word.slice(0, word.length - prev.text.length) + c;
      } else {
        line[line.length - 1] = word + c;
      }
      prev = bounds ? { box: bounds, text: c } : null;
    }
  }
  const text = paragraphs
    .map((lines) =>
      lines
        .map((words) => words.filter((w) => w !== '').join(' '))
        .filter((l) => l !== '')
        .join('\n'),
    )
    .filter((p) => p !== '')
    .join('\n\n');
  return text === '' ? '' : `${text}\n`;
}

/** ffmpeg's gray picture or tesseract's hOCR: far below this. */
const MAX_OUTPUT = 64 * 1024 * 1024;

/** Past the time limit in either step is the same answer (a loaded device's ffmpeg too). */
function failure(err: unknown): OcrError {
  const timedOut = err instanceof CommandError && err.timedOut;
  return new OcrError(timedOut ? 'OCR timed out' : "Can't recognize image");
}

export interface OcrServiceOptions {
  /** The tesseract command (a name looked up in PATH, or a path). */
  tesseract?: string;
  ffmpeg?: string;
  /** kvmd's `ocr.langs` default. */
  defaultLangs?: string[];
  /** PATH and the like for the commands (tests take tesseract away with it). */
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  log?: { warn(obj: object, msg: string): void };
}

/** How long a language list is reused: packages may be added while the server runs. */
const LANGS_TTL_MS = 5000;

export class OcrService {
  private readonly tesseract: string;
  private readonly ffmpeg: string;
  private readonly defaultLangs: string[];
  private readonly env: NodeJS.ProcessEnv;
  private readonly timeoutMs: number;
  private langsCache: { at: number; value: Promise<string[] | null> } | null = null;
  /** One recognition running, OCR_LIMITS.queue waiting, the next refused (409). */
  private readonly queue = new SerialQueue({
    max: OCR_LIMITS.queue,
    busyError: () => new OcrBusyError(),
  });

  constructor(private readonly opts: OcrServiceOptions = {}) {
    this.tesseract = opts.tesseract ?? 'tesseract';
    this.ffmpeg = opts.ffmpeg ?? 'ffmpeg';
    this.defaultLangs = opts.defaultLangs ?? ['eng'];
    // One thread: tesseract's OpenMP would take every core for a small picture.
    this.env = { ...(opts.env ?? process.env), OMP_THREAD_LIMIT: '1' };
    this.timeoutMs = opts.timeoutMs ?? OCR_LIMITS.timeoutMs;
  }

  /** Installed languages (tesseract --list-langs, top-level ones, without `osd`); null: none. */
  private installed(): Promise<string[] | null> {
    const now = Date.now();
    if (this.langsCache && now - this.langsCache.at < LANGS_TTL_MS) return this.langsCache.value;
    const value = runCommandBuffer(this.tesseract, ['--list-langs'], {
      timeoutMs: 5000,
      maxBuffer: MAX_OUTPUT,
      env: this.env,
    }).then(
      (r) => {
        const lines = r.stdout.toString('utf8').split('\n').slice(1);
        const langs = lines
          .map((l) => l.trim())
          .filter((l) => OCR_LANG_NAME.test(l) && l !== 'osd');
        return [...new Set(langs)].sort();
      },
      () => null,
    );
    this.langsCache = { at: now, value };
    return value;
  }

  /** Languages installed (tesseract --list-langs), and the defaults. */
  async languages(): Promise<{ available: string[]; default: string[] }> {
    const available = await this.installed();
    return { available: available ?? [], default: available ? [...this.defaultLangs] : [] };
  }

  /** kvmd's OCR state: `enabled` when tesseract runs; the lists are empty when it does not. */
  async state(): Promise<OcrState> {
    const available = await this.installed();
    return {
      enabled: available !== null,
      langs: { default: available ? [...this.defaultLangs] : [], available: available ?? [] },
    };
  }

  /** The `ocr` event of `/api/ws` (kvmd sends it to each new client). */
  provider(): StateProvider {
    return {
      name: 'ocr',
      snapshot: async () => [{ event_type: 'ocr', event: await this.state() }],
      subscribe: () => () => undefined,
    };
  }

  /**
   * Text of `image` in the crop, with `langs`. The image is a JPEG (a saved snapshot) or, better,
   * the raw frame itself: the stream's JPEG artefacts make tesseract see glyphs that are not
   * there (bench/ocr.ts: `kernel]` for `kernel` at quality 80, exact from the frame).
   */
  async recognize(image: Buffer | RawFrame, req: OcrRequest): Promise<string> {
    const available = await this.installed();
    if (available === null) throw new OcrError('Tesseract is not available');
    const langs = req.langs.length > 0 ? req.langs : this.defaultLangs;
    if (!req.langs.every((l) => available.includes(l))) throw langsError(req.langs);
    const raw = Buffer.isBuffer(image) ? null : image;
    const jpeg = Buffer.isBuffer(image) ? image : null;
    if (jpeg && jpeg.length > OCR_LIMITS.imageBytes) {
      throw new OcrError('The image is too large');
    }
    const size = raw ?? jpegSize(jpeg!);
    if (!size) throw new OcrError("Can't recognize image");
    if (size.width * size.height > OCR_LIMITS.imagePixels) {
      throw new OcrError('The image is too large');
    }
    const box = cropBox(size.width, size.height, req);
    return this.queue.run(() => this.read(image, box, langs));
  }

  private async read(image: Buffer | RawFrame, box: Box, langs: string[]): Promise<string> {
    // Gray, then crop (exact pixels: no chroma rounding), then 2x: tesseract reads an 8x16
    // console font far better at twice its size (bench/ocr.ts: 19 of 44 lines exact at 1x, 33
    // at 2x, 31 at 3x), as kvmd also scales 2x.
    const filter = `format=gray,crop=${box.w}:${box.h}:${box.x}:${box.y},scale=iw*2:ih*2:flags=bicubic`;
    let gray: Buffer;
    try {
      const input = Buffer.isBuffer(image)
        ? ['-f', 'jpeg_pipe']
        : ['-f', 'rawvideo', '-pix_fmt', image.format, '-s', `${image.width}x${image.height}`];
      const r = await runCommandBuffer(
        this.ffmpeg,
        ['-hide_banner', '-loglevel', 'error', '-nostdin', '-threads', '1']
          .concat(input, ['-i', 'pipe:0', '-vf', filter, '-frames:v', '1'])
          .concat(['-f', 'image2pipe', '-c:v', 'pgm', 'pipe:1']),
        {
          input: Buffer.isBuffer(image) ? image : image.data,
          timeoutMs: this.timeoutMs,
          maxBuffer: MAX_OUTPUT,
          env: this.env,
        },
      );
      gray = darkOnLight(r.stdout);
    } catch (err) {
      this.opts.log?.warn({ err }, 'ocr: ffmpeg failed');
      throw failure(err);
    }
    try {
      // psm 6 (one block of text): what libtesseract does by default (kvmd calls it so), and
      // it keeps a console's lines in order.
      // hOCR with each glyph's box: hocrText() turns it into tesseract's plain text, reading
      // the look-alike zero from the picture.
      const r = await runCommandBuffer(
        this.tesseract,
        [
          'stdin',
          'stdout',
          '-l',
          langs.join('+'),
          '--psm',
          '6',
          '-c',
          'debug_file=/dev/null',
        ].concat(['-c', 'hocr_char_boxes=1', 'hocr']),
        { input: gray, timeoutMs: this.timeoutMs, maxBuffer: MAX_OUTPUT, env: this.env },
      );
      return hocrText(r.stdout.toString('utf8'), gray);
    } catch (err) {
      this.opts.log?.warn({ err }, 'ocr: tesseract failed');
      throw failure(err);
    }
  }
}
