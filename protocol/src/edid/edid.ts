/**
 * EDID blobs: our own generator (VESA E-EDID base block, written as version 1.3 because HDMI
 * requires it, + one CTA-861 extension), the parser
 * of the hex text users submit (GL's rules, wire-protocol.md §5.13) and the preferred mode of an
 * EDID. Pure functions on Uint8Array: the browser and the server share them.
 */
import {
  CTA_1080P60,
  CTA_2160P30,
  CTA_640X480P60,
  CTA_720P60,
  decodeDtd,
  encodeDtd,
  type VideoTiming,
} from './timing';

export const EDID_BLOCK_SIZE = 128;
const HEADER = [0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00];

/** What one generated EDID says about its monitor. */
export interface EdidSpec {
  /** PNP manufacturer id: three letters A-Z. */
  manufacturer: string;
  productCode: number;
  /** Monitor name descriptor, at most 13 ASCII characters. */
  name: string;
  /** Serial number string descriptor, at most 13 ASCII characters. */
  serialText: string;
  /** The preferred (native) timing: the first DTD. */
  preferred: VideoTiming;
  /** Screen diagonal in inches, for the physical size fields. */
  diagonalInches: number;
  /** Basic audio (LPCM 2 channels) in the CTA block. */
  audio: boolean;
  week?: number;
  year?: number;
}

/** A timing the EDID lists besides the DTD, with what the range limits must cover. */
interface ListedTiming {
  width: number;
  height: number;
  pixelClockKhz: number;
  hTotal: number;
  vTotal: number;
}
const listed = (w: number, h: number, clockKhz: number, ht: number, vt: number): ListedTiming => ({
  width: w,
  height: h,
  pixelClockKhz: clockKhz,
  hTotal: ht,
  vTotal: vt,
});

/** Established timings I/II we set (E-EDID 1.4 table 3.18): byte, bit, DMT timing. */
const ESTABLISHED: { byte: 0 | 1; bit: number; timing: ListedTiming }[] = [
  { byte: 0, bit: 5, timing: listed(640, 480, 25_175, 800, 525) },
  { byte: 0, bit: 0, timing: listed(800, 600, 40_000, 1056, 628) },
  { byte: 1, bit: 3, timing: listed(1024, 768, 65_000, 1344, 806) },
];

/** Standard timings (all 60 Hz, DMT): aspect code (00 16:10, 01 4:3, 10 5:4, 11 16:9). */
const STANDARD: { aspect: number; timing: ListedTiming }[] = [
  { aspect: 0b11, timing: listed(1280, 720, 74_250, 1650, 750) },
  { aspect: 0b00, timing: listed(1280, 800, 83_500, 1680, 831) },
  { aspect: 0b10, timing: listed(1280, 1024, 108_000, 1688, 1066) },
  { aspect: 0b00, timing: listed(1440, 900, 106_500, 1904, 934) },
  { aspect: 0b01, timing: listed(1600, 1200, 162_000, 2160, 1250) },
  { aspect: 0b00, timing: listed(1680, 1050, 146_250, 2240, 1089) },
  { aspect: 0b11, timing: listed(1920, 1080, 148_500, 2200, 1125) },
];

/** CTA VICs we may list, smallest first (VIC 1 always: CTA-861 requires it). */
const CTA_VICS: VideoTiming[] = [CTA_640X480P60, CTA_720P60, CTA_1080P60, CTA_2160P30];

const fits = (t: { width: number; height: number }, max: { width: number; height: number }) =>
  t.width <= max.width && t.height <= max.height;

const asListed = (t: VideoTiming): ListedTiming =>
  listed(
    t.width,
    t.height,
    t.pixelClockKhz,
    t.width + t.hFrontPorch + t.hSync + t.hBackPorch,
    t.height + t.vFrontPorch + t.vSync + t.vBackPorch,
  );

function checksum(block: Uint8Array): void {
  let sum = 0;
  for (let i = 0; i < EDID_BLOCK_SIZE - 1; i += 1) sum += block[i] ?? 0;
  block[EDID_BLOCK_SIZE - 1] = (256 - (sum % 256)) % 256;
}

function blockSumOk(bytes: Uint8Array, block: number): boolean {
  let sum = 0;
  for (let i = 0; i < EDID_BLOCK_SIZE; i += 1) sum += bytes[block * EDID_BLOCK_SIZE + i] ?? 0;
  return sum % 256 === 0;
}

/** Display descriptor with 13 bytes of text (name 0xFC, serial 0xFF): 0x0A-terminated, space-padded. */
function textDescriptor(tag: number, text: string): Uint8Array {
  const d = new Uint8Array(18);
  d[3] = tag;
  const chars = Array.from(text.slice(0, 13), (c) => c.charCodeAt(0) & 0x7f);
  for (let i = 0; i < 13; i += 1) {
    d[5 + i] = i < chars.length ? (chars[i] ?? 0x20) : i === chars.length ? 0x0a : 0x20;
  }
  return d;
}

/** Display range limits descriptor (0xFD) covering every listed timing; "range limits only". */
function rangeLimitsDescriptor(timings: ListedTiming[]): Uint8Array {
  const vRates = timings.map((t) => (t.pixelClockKhz * 1000) / t.hTotal / t.vTotal);
  const hRatesKhz = timings.map((t) => t.pixelClockKhz / t.hTotal);
  const maxClockKhz = Math.max(...timings.map((t) => t.pixelClockKhz));
  const d = new Uint8Array(18);
  d[3] = 0xfd;
  d[5] = Math.max(1, Math.floor(Math.min(...vRates)) - 1);
  d[6] = Math.ceil(Math.max(...vRates)) + 1;
  d[7] = Math.max(1, Math.floor(Math.min(...hRatesKhz)) - 1);
  d[8] = Math.ceil(Math.max(...hRatesKhz)) + 1;
  d[9] = Math.ceil(maxClockKhz / 10_000); // 10 MHz units
  d[10] = 0x00; // EDID 1.3: no secondary timing formula
  d[11] = 0x0a;
  for (let i = 12; i < 18; i += 1) d[i] = 0x20;
  return d;
}

/** Width and height in mm of a `diagonal`-inch screen of the mode's aspect. */
function physicalSizeMm(
  diagonalInches: number,
  t: { width: number; height: number },
): [number, number] {
  const diagMm = diagonalInches * 25.4;
  const k = diagMm / Math.hypot(t.width, t.height);
  return [Math.round(t.width * k), Math.round(t.height * k)];
}

function manufacturerId(id: string): [number, number] {
  if (!/^[A-Z]{3}$/.test(id)) throw new RangeError('manufacturer id must be three letters A-Z');
  const code = [...id].reduce((acc, c) => (acc << 5) | (c.charCodeAt(0) - 64), 0);
  return [code >> 8, code & 0xff];
}

/** The VIC timings (listed in the CTA video data block) that fit in `preferred`. */
function vicsFor(preferred: { width: number; height: number }): VideoTiming[] {
  return CTA_VICS.filter((t) => fits(t, preferred));
}

/** The base block (128 bytes) of `spec`, its extension count set to 1. */
function baseBlock(spec: EdidSpec): Uint8Array {
  const b = new Uint8Array(EDID_BLOCK_SIZE);
  b.set(HEADER, 0);
  const [m0, m1] = manufacturerId(spec.manufacturer);
  b[8] = m0;
  b[9] = m1;
  b[10] = spec.productCode & 0xff;
  b[11] = (spec.productCode >> 8) & 0xff;
  // Bytes 12-15 (serial number) stay 0: the serial string descriptor carries it.
  b[16] = spec.week ?? 10;
  b[17] = (spec.year ?? 2024) - 1990;
  // EDID 1.3 structure: the HDMI specification requires it (edid-decode fails 1.4 with an
  // HDMI VSDB); HDMI sources and every OS read it the same way.
  b[18] = 1;
  b[19] = 3;
  b[20] = 0x80; // digital input
  const [wMm, hMm] = physicalSizeMm(spec.diagonalInches, spec.preferred);
  b[21] = Math.round(wMm / 10);
  b[22] = Math.round(hMm / 10);
  b[23] = 120; // gamma 2.2
  // DPMS active-off, RGB colour display, sRGB default colour space, preferred timing mode.
  b[24] = 0x2e;
  // sRGB chromaticity (red .640/.330, green .300/.600, blue .150/.060, white D65 .3127/.3290).
  const chroma = [0.64, 0.33, 0.3, 0.6, 0.15, 0.06, 0.3127, 0.329].map((v) => Math.round(v * 1024));
  const lo = (i: number) => (chroma[i] ?? 0) & 0x03;
  b[25] = (lo(0) << 6) | (lo(1) << 4) | (lo(2) << 2) | lo(3);
  b[26] = (lo(4) << 6) | (lo(5) << 4) | (lo(6) << 2) | lo(7);
  chroma.forEach((v, i) => {
    b[27 + i] = v >> 2;
  });

  const timings: ListedTiming[] = [asListed(spec.preferred)];
  for (const e of ESTABLISHED) {
    if (!fits(e.timing, spec.preferred)) continue;
    b[35 + e.byte] = (b[35 + e.byte] ?? 0) | (1 << e.bit);
    timings.push(e.timing);
  }
  const standard = STANDARD.filter((s) => fits(s.timing, spec.preferred)).slice(0, 8);
  for (let i = 0; i < 8; i += 1) {
    const s = standard[i];
    b[38 + i * 2] = s ? s.timing.width / 8 - 31 : 0x01;
    b[39 + i * 2] = s ? s.aspect << 6 /* refresh 60 + 0 */ : 0x01;
    if (s) timings.push(s.timing);
  }
  timings.push(...vicsFor(spec.preferred).map(asListed));

  b.set(encodeDtd(spec.preferred, wMm, hMm), 54);
  b.set(rangeLimitsDescriptor(timings), 72);
  b.set(textDescriptor(0xfc, spec.name), 90);
  b.set(textDescriptor(0xff, spec.serialText), 108);
  b[126] = 1;
  checksum(b);
  return b;
}

/**
 * A CTA-861 extension (revision 3) for a monitor whose native mode is `preferred`: video data
 * block (the VICs that fit, the native one marked), LPCM audio and speaker allocation when
 * `audio`, an HDMI vendor-specific data block (IEEE OUI 00-0C-03, physical address 1.0.0.0) so
 * sources drive it as HDMI. No DTDs of its own.
 */
export function ctaBlock(preferred: { width: number; height: number }, audio: boolean): Uint8Array {
  const vics = vicsFor(preferred);
  // Largest first, none marked native: the base block's DTD is the one native timing.
  const vicBytes = vics.map((t) => t.vic ?? 1).reverse();
  const blocks: number[] = [(2 << 5) | vicBytes.length, ...vicBytes];
  if (audio) {
    // LPCM (format 1), 2 channels; 32/44.1/48 kHz; 16/20/24 bit.
    blocks.push((1 << 5) | 3, (1 << 3) | (2 - 1), 0x07, 0x07);
    // Speaker allocation: front left/right.
    blocks.push((4 << 5) | 3, 0x01, 0x00, 0x00);
  }
  // Video capability: RGB quantization range selectable; IT and CE formats underscanned.
  blocks.push((7 << 5) | 2, 0x00, 0x4a);
  const maxClockKhz = Math.max(...vics.map((t) => t.pixelClockKhz));
  // HDMI VSDB: OUI little-endian, physical address 1.0.0.0, no deep colour, max TMDS in 5 MHz.
  blocks.push((3 << 5) | 7, 0x03, 0x0c, 0x00, 0x10, 0x00, 0x00, Math.ceil(maxClockKhz / 5000));

  const c = new Uint8Array(EDID_BLOCK_SIZE);
  c[0] = 0x02;
  c[1] = 0x03;
  c[2] = 4 + blocks.length; // where DTDs would start: none follow
  c[3] = 0x80 | (audio ? 0x40 : 0) | 1; // underscan; basic audio; one native DTD (the base's)
  c.set(blocks, 4);
  checksum(c);
  return c;
}

/** The 256-byte EDID (base block + CTA block) of `spec`. */
export function buildEdid(spec: EdidSpec): Uint8Array {
  const out = new Uint8Array(EDID_BLOCK_SIZE * 2);
  out.set(baseBlock(spec), 0);
  out.set(ctaBlock(spec.preferred, spec.audio), EDID_BLOCK_SIZE);
  return out;
}

/** Lower-case hex, no separators (GL's `content`). */
export function edidToHex(bytes: Uint8Array): string {
  return Array.from(bytes, (v) => v.toString(16).padStart(2, '0')).join('');
}

/**
 * The bytes of a submitted EDID (GL's rule: whitespace ignored, exactly 256 or 512 hex
 * characters), or null when it is not one: wrong length, odd or non-hex characters, no EDID
 * header, or a block whose checksum is wrong.
 */
export function parseEdidHex(text: string): Uint8Array | null {
  const hex = text.replace(/\s+/g, '');
  if (hex.length !== 256 && hex.length !== 512) return null;
  if (!/^[0-9a-fA-F]+$/.test(hex)) return null;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i += 1) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  if (!HEADER.every((v, i) => bytes[i] === v)) return null;
  for (let block = 0; block < bytes.length / EDID_BLOCK_SIZE; block += 1) {
    if (!blockSumOk(bytes, block)) return null;
  }
  return bytes;
}

/**
 * A 256-byte EDID for `edid`: a 128-byte base block gets our CTA block appended (GL appends a
 * fixed one), its extension count set to 1 and its checksum fixed; 256 bytes come back as they are.
 */
export function withCtaExtension(edid: Uint8Array): Uint8Array {
  if (edid.length >= EDID_BLOCK_SIZE * 2) return edid.slice(0, EDID_BLOCK_SIZE * 2);
  const base = edid.slice(0, EDID_BLOCK_SIZE);
  base[126] = 1;
  checksum(base);
  const preferred = edidPreferredMode(base) ?? { width: 640, height: 480 };
  const out = new Uint8Array(EDID_BLOCK_SIZE * 2);
  out.set(base, 0);
  out.set(ctaBlock(preferred, true), EDID_BLOCK_SIZE);
  return out;
}

export interface EdidMode {
  width: number;
  height: number;
  /** Rounded to whole Hz (59.95 → 60). */
  hz: number;
}

/** The mode of the first DTD (the preferred timing in EDID 1.4), or null when there is none. */
export function edidPreferredMode(bytes: Uint8Array): EdidMode | null {
  const offsets = [54, 72, 90, 108];
  if (bytes.length >= EDID_BLOCK_SIZE * 2 && bytes[EDID_BLOCK_SIZE] === 0x02) {
    const start = bytes[EDID_BLOCK_SIZE + 2] ?? 0;
    for (let o = start; o >= 4 && o + 18 <= EDID_BLOCK_SIZE - 1; o += 18) {
      offsets.push(EDID_BLOCK_SIZE + o);
    }
  }
  for (const offset of offsets) {
    const dtd = decodeDtd(bytes, offset);
    if (!dtd || dtd.width === 0 || dtd.height === 0 || dtd.hTotal === 0 || dtd.vTotal === 0) {
      continue;
    }
    const hz = Math.round((dtd.pixelClockKhz * 1000) / dtd.hTotal / dtd.vTotal);
    return { width: dtd.width, height: dtd.height, hz };
  }
  return null;
}

/** SPEC 3's "4K EDID": a preferred mode of at least 3840x2160. Takes the mode or the bytes. */
export function isEdid4k(
  edid: Uint8Array | { width: number; height: number } | null | undefined,
): boolean {
  const mode = edid instanceof Uint8Array ? edidPreferredMode(edid) : edid;
  return !!mode && mode.width >= 3840 && mode.height >= 2160;
}

/**
 * Where the CEC physical address sits in an EDID: the two bytes after the HDMI vendor block's
 * IEEE OUI (00-0C-03) in the CTA extension, or null without one.
 */
export function cecPhysicalAddressOffset(bytes: Uint8Array): number | null {
  const cta = EDID_BLOCK_SIZE;
  if (bytes.length < cta * 2 || bytes[cta] !== 0x02) return null;
  const end = cta + (bytes[cta + 2] ?? 0);
  for (let i = cta + 4; i < end && i < cta * 2 - 1;) {
    const tag = (bytes[i] ?? 0) >> 5;
    const len = (bytes[i] ?? 0) & 0x1f;
    if (
      tag === 3 &&
      len >= 5 &&
      bytes[i + 1] === 0x03 &&
      bytes[i + 2] === 0x0c &&
      bytes[i + 3] === 0x00
    ) {
      return i + 4;
    }
    i += len + 1;
  }
  return null;
}

/**
 * The same EDID, but for the CEC physical address and the CTA block's checksum: an HDMI
 * receiver with CEC (vivid, and the kernel's bridges through v4l2_set_edid_phys_addr) answers
 * VIDIOC_G_EDID with its own physical address in the bytes it was given.
 */
export function sameEdidButPhysicalAddress(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  const pa = cecPhysicalAddressOffset(a);
  const skip = pa === null ? [] : [pa, pa + 1, EDID_BLOCK_SIZE * 2 - 1];
  for (let i = 0; i < a.length; i += 1) {
    if (a[i] !== b[i] && !skip.includes(i)) return false;
  }
  return true;
}
