/**
 * Parsers of Debian's `v4l2-ctl` (v4l-utils 1.22) output, pure and unit-tested on outputs
 * recorded from vivid in the device VM (parse.test.ts). v4l2-ctl prints a failed ioctl as
 * `VIDIOC_X: failed: <strerror>` on stderr and exits 255; `faultOf` maps those texts (glibc's
 * strerror, the same on every Debian board) to what they mean for an HDMI capture.
 */

/** One capture's DV timings (`--query-dv-timings`, `--get-dv-timings`). */
export interface DvTimings {
  width: number;
  height: number;
  totalWidth: number;
  totalHeight: number;
  interlaced: boolean;
  /** Hz. */
  pixelclock: number;
  /** Frames per second, 2 decimals (v4l2-ctl's own figure, else pixelclock / total size). */
  fps: number;
}

/**
 * What a failed v4l2-ctl call means:
 * - `no_signal` ENOLINK: nothing on the HDMI input (or no EDID offered to it);
 * - `no_lock` ENOLCK: a signal the receiver cannot lock onto;
 * - `out_of_range` ERANGE: timings beyond the receiver;
 * - `unsupported` ENOTTY/ENODATA/EINVAL: the device has no such call (a USB dongle: no DV timings);
 * - `busy` EBUSY: somebody streams from it (new timings must wait for the reader to stop);
 * - `no_device` ENODEV/ENOENT/ENXIO or "Cannot open device": unplugged or gone;
 * - `invalid`: the call succeeded with nonsense (timings without a picture size);
 * - `error`: anything else.
 */
export type V4l2Fault =
  | 'no_signal'
  | 'no_lock'
  | 'out_of_range'
  | 'unsupported'
  | 'busy'
  | 'no_device'
  | 'invalid'
  | 'error';

const FAULT_TEXTS: Array<[RegExp, V4l2Fault]> = [
  [/Link has been severed/i, 'no_signal'],
  [/No locks available/i, 'no_lock'],
  [/Numerical result out of range/i, 'out_of_range'],
  [/Device or resource busy/i, 'busy'],
  [/Inappropriate ioctl for device|No data available|Invalid argument/i, 'unsupported'],
  [
    /Cannot open device|No such device|No such file or directory|No such device or address/i,
    'no_device',
  ],
];

/** The fault a v4l2-ctl failure's text says (stderr, or stdout: it prints some there). */
export function faultOf(text: string): V4l2Fault {
  for (const [re, fault] of FAULT_TEXTS) if (re.test(text)) return fault;
  return 'error';
}

/** The first `VIDIOC_...: failed: ...` line, or the text's last non-empty line. */
export function failureLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim());
  return lines.find((l) => /: failed: /.test(l)) ?? lines.filter(Boolean).at(-1) ?? '';
}

function field(text: string, name: string): string | null {
  const m = new RegExp(`^\\s*${name}\\s*:\\s*(.*)$`, 'mi').exec(text);
  return m ? m[1]!.trim() : null;
}

function intField(text: string, name: string): number | null {
  const v = field(text, name);
  if (v === null || !/^\d+/.test(v)) return null;
  return parseInt(v, 10);
}

/** DV timings from v4l2-ctl's lines, or null when they are not there or name no picture. */
export function parseDvTimings(text: string): DvTimings | null {
  const width = intField(text, 'Active width');
  const height = intField(text, 'Active height');
  if (width === null || height === null || width <= 0 || height <= 0) return null;
  const totalWidth = intField(text, 'Total width') ?? width;
  const totalHeight = intField(text, 'Total height') ?? height;
  const clock = /^\s*Pixelclock:\s*(\d+)\s*Hz(?:\s*\(([\d.]+) frames per second\))?/im.exec(text);
  const pixelclock = clock ? Number(clock[1]) : 0;
  const interlaced = /^\s*Frame format:\s*interlaced/im.test(text);
  let fps = clock?.[2] ? Number(clock[2]) : 0;
  if (!fps && pixelclock > 0 && totalWidth > 0 && totalHeight > 0) {
    fps = pixelclock / (totalWidth * totalHeight);
    if (interlaced) fps *= 2;
  }
  return {
    width,
    height,
    totalWidth,
    totalHeight,
    interlaced,
    pixelclock,
    fps: Math.round(fps * 100) / 100,
  };
}

/** The current capture format (`--get-fmt-video`). */
export interface CaptureFormat {
  width: number;
  height: number;
  /** The V4L2 fourcc, e.g. `YUYV`, `MJPG`. */
  fourcc: string;
}

export function parseFormat(text: string): CaptureFormat | null {
  const size = /^\s*Width\/Height\s*:\s*(\d+)\/(\d+)/m.exec(text);
  const fourcc = /^\s*Pixel Format\s*:\s*'([^']{1,4})'/m.exec(text);
  if (!size || !fourcc) return null;
  return { width: Number(size[1]), height: Number(size[2]), fourcc: fourcc[1]!.trim() };
}

/** One size a format offers (`--list-formats-ext`), with its frame rates (fps). */
export interface FormatSize {
  width: number;
  height: number;
  fps: number[];
}

export interface FormatChoice {
  fourcc: string;
  sizes: FormatSize[];
}

/**
 * `--list-formats-ext` (or `--list-formats`, sizes then empty): each `[n]: 'FOURCC' (...)` with
 * its `Size: Discrete WxH` lines and their `Interval: Discrete 0.033s (30.000 fps)` lines. A
 * stepwise or continuous size range is taken at its largest size.
 */
export function parseFormats(text: string): FormatChoice[] {
  const out: FormatChoice[] = [];
  let size: FormatSize | null = null;
  for (const line of text.split('\n')) {
    const fmt = /^\s*\[\d+\]:\s*'([^']{1,4})'/.exec(line);
    if (fmt) {
      out.push({ fourcc: fmt[1]!.trim(), sizes: [] });
      size = null;
      continue;
    }
    const current = out.at(-1);
    if (!current) continue;
    const discrete = /^\s*Size:\s*Discrete\s+(\d+)x(\d+)/.exec(line);
    const ranged = /^\s*Size:\s*(?:Stepwise|Continuous)\s+\d+x\d+\s*-\s*(\d+)x(\d+)/.exec(line);
    const m = discrete ?? ranged;
    if (m) {
      size = { width: Number(m[1]), height: Number(m[2]), fps: [] };
      current.sizes.push(size);
      continue;
    }
    const interval = /^\s*Interval:.*\(([\d.]+)(?:-[\d.]+)? fps\)/.exec(line);
    if (interval && size) size.fps.push(Number(interval[1]));
  }
  return out;
}

/** EDID bytes of `--get-edid=format=hex` (hex pairs and whitespace), or null if there are none. */
export function parseEdidHexDump(text: string): Buffer | null {
  const hex = text.replace(/\s+/g, '');
  if (hex.length === 0 || hex.length % 256 !== 0 || !/^[0-9a-fA-F]+$/.test(hex)) return null;
  return Buffer.from(hex, 'hex');
}

/** 16 hex pairs a line, as v4l2-ctl reads and writes `format=hex`. */
export function edidHexDump(bytes: Uint8Array): string {
  const lines: string[] = [];
  for (let i = 0; i < bytes.length; i += 16) {
    lines.push(
      Array.from(bytes.subarray(i, i + 16), (b) => b.toString(16).padStart(2, '0')).join(' '),
    );
  }
  return lines.join('\n') + '\n';
}

/**
 * V4L2 fourcc -> ffmpeg's `-input_format` name, for the formats ffmpeg's v4l2 input reads and
 * a capture chip or dongle offers (the order of the default preference, config `formats`).
 */
export const FOURCC_TO_FFMPEG: Record<string, string> = {
  YUYV: 'yuyv422',
  UYVY: 'uyvy422',
  NV12: 'nv12',
  YU12: 'yuv420p',
  NV16: 'nv16',
  RGB3: 'rgb24',
  BGR3: 'bgr24',
  MJPG: 'mjpeg',
  JPEG: 'mjpeg',
  H264: 'h264',
};

/** The ffmpeg name of a fourcc, or null when ffmpeg's v4l2 input would not take it here. */
export function ffmpegFormatOf(fourcc: string): string | null {
  return FOURCC_TO_FFMPEG[fourcc] ?? null;
}
