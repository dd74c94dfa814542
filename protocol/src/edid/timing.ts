/**
 * Video timings for EDID detailed timing descriptors: the CTA-861 timings where a VIC exists
 * (1080p60, 2160p30), VESA CVT reduced blanking v1 (CVT 1.2) for the others, and the 18-byte
 * detailed timing descriptor (DTD) encoding of E-EDID 1.4 both ways.
 */

export interface VideoTiming {
  width: number;
  height: number;
  /** Pixel clock in kHz (a DTD carries 10 kHz units: at most 655 350 kHz). */
  pixelClockKhz: number;
  hFrontPorch: number;
  hSync: number;
  hBackPorch: number;
  vFrontPorch: number;
  vSync: number;
  vBackPorch: number;
  hSyncPositive: boolean;
  vSyncPositive: boolean;
  /** The CTA-861 VIC of this timing, when it has one. */
  vic?: number;
}

export const hTotal = (t: VideoTiming): number => t.width + t.hFrontPorch + t.hSync + t.hBackPorch;
export const vTotal = (t: VideoTiming): number => t.height + t.vFrontPorch + t.vSync + t.vBackPorch;
/** Line rate in Hz. */
export const hFreqHz = (t: VideoTiming): number => (t.pixelClockKhz * 1000) / hTotal(t);
/** Frame rate in Hz (not rounded). */
export const vFreqHz = (t: VideoTiming): number => hFreqHz(t) / vTotal(t);

/** CTA-861 VIC 16: 1920x1080p 60 Hz, 148.5 MHz. */
export const CTA_1080P60: VideoTiming = {
  width: 1920,
  height: 1080,
  pixelClockKhz: 148_500,
  hFrontPorch: 88,
  hSync: 44,
  hBackPorch: 148,
  vFrontPorch: 4,
  vSync: 5,
  vBackPorch: 36,
  hSyncPositive: true,
  vSyncPositive: true,
  vic: 16,
};

/** CTA-861 VIC 95: 3840x2160p 30 Hz, 297 MHz (HDMI 1.4 4K, HDMI VIC 1). */
export const CTA_2160P30: VideoTiming = {
  width: 3840,
  height: 2160,
  pixelClockKhz: 297_000,
  hFrontPorch: 176,
  hSync: 88,
  hBackPorch: 296,
  vFrontPorch: 8,
  vSync: 10,
  vBackPorch: 72,
  hSyncPositive: true,
  vSyncPositive: true,
  vic: 95,
};

/** CTA-861 VIC 4: 1280x720p 60 Hz, 74.25 MHz. */
export const CTA_720P60: VideoTiming = {
  width: 1280,
  height: 720,
  pixelClockKhz: 74_250,
  hFrontPorch: 110,
  hSync: 40,
  hBackPorch: 220,
  vFrontPorch: 5,
  vSync: 5,
  vBackPorch: 20,
  hSyncPositive: true,
  vSyncPositive: true,
  vic: 4,
};

/** CTA-861 VIC 1: 640x480p 59.94 Hz, 25.175 MHz (every CTA sink must list it). */
export const CTA_640X480P60: VideoTiming = {
  width: 640,
  height: 480,
  pixelClockKhz: 25_175,
  hFrontPorch: 16,
  hSync: 96,
  hBackPorch: 48,
  vFrontPorch: 10,
  vSync: 2,
  vBackPorch: 33,
  hSyncPositive: false,
  vSyncPositive: false,
  vic: 1,
};

/** CVT's vertical sync width by aspect ratio (CVT 1.2 table 3-2); 10 for any other ratio. */
function cvtVSync(width: number, height: number): number {
  const is = (w: number, h: number) => width * h === height * w;
  if (is(4, 3)) return 4;
  if (is(16, 9)) return 5;
  if (is(16, 10)) return 6;
  if (is(5, 4) || is(15, 9)) return 7;
  return 10;
}

/**
 * VESA CVT reduced blanking (v1) for a progressive mode: 160 pixels of horizontal blanking
 * (front 48, sync 32, back 80), at least 460 µs of vertical blanking, vertical front porch 3,
 * pixel clock rounded down to 0.25 MHz. Sync: H positive, V negative.
 */
export function cvtReducedBlanking(width: number, height: number, refreshHz: number): VideoTiming {
  const CELL = 8;
  const MIN_V_BLANK_US = 460;
  const V_FRONT_PORCH = 3;
  const MIN_V_BACK_PORCH = 6;
  const H_BLANK = 160;
  const CLOCK_STEP_MHZ = 0.25;
  const hActive = Math.floor(width / CELL) * CELL;
  const vSync = cvtVSync(width, height);
  const hPeriodEstUs = (1_000_000 / refreshHz - MIN_V_BLANK_US) / height;
  const vbiLines = Math.max(
    Math.floor(MIN_V_BLANK_US / hPeriodEstUs) + 1,
    V_FRONT_PORCH + vSync + MIN_V_BACK_PORCH,
  );
  const totalLines = height + vbiLines;
  const totalPixels = hActive + H_BLANK;
  const clockMhz =
    CLOCK_STEP_MHZ *
    Math.floor((refreshHz * totalLines * totalPixels) / 1_000_000 / CLOCK_STEP_MHZ);
  return {
    width: hActive,
    height,
    pixelClockKhz: Math.round(clockMhz * 1000),
    hFrontPorch: 48,
    hSync: 32,
    hBackPorch: 80,
    vFrontPorch: V_FRONT_PORCH,
    vSync,
    vBackPorch: vbiLines - V_FRONT_PORCH - vSync,
    hSyncPositive: true,
    vSyncPositive: false,
  };
}

/** The largest pixel clock a DTD can carry: 16 bits of 10 kHz. */
export const DTD_MAX_PIXEL_CLOCK_KHZ = 0xffff * 10;

/**
 * The 18-byte detailed timing descriptor (E-EDID 1.4 §3.10.2) of `t`, with the image size in
 * millimetres. Digital separate sync.
 */
export function encodeDtd(t: VideoTiming, widthMm: number, heightMm: number): Uint8Array {
  const clock = Math.round(t.pixelClockKhz / 10);
  if (clock <= 0 || clock > 0xffff) throw new RangeError('pixel clock out of DTD range');
  const hBlank = t.hFrontPorch + t.hSync + t.hBackPorch;
  const vBlank = t.vFrontPorch + t.vSync + t.vBackPorch;
  const d = new Uint8Array(18);
  d[0] = clock & 0xff;
  d[1] = clock >> 8;
  d[2] = t.width & 0xff;
  d[3] = hBlank & 0xff;
  d[4] = ((t.width >> 8) << 4) | (hBlank >> 8);
  d[5] = t.height & 0xff;
  d[6] = vBlank & 0xff;
  d[7] = ((t.height >> 8) << 4) | (vBlank >> 8);
  d[8] = t.hFrontPorch & 0xff;
  d[9] = t.hSync & 0xff;
  d[10] = ((t.vFrontPorch & 0x0f) << 4) | (t.vSync & 0x0f);
  d[11] =
    ((t.hFrontPorch >> 8) << 6) |
    ((t.hSync >> 8) << 4) |
    ((t.vFrontPorch >> 4) << 2) |
    (t.vSync >> 4);
  d[12] = widthMm & 0xff;
  d[13] = heightMm & 0xff;
  d[14] = ((widthMm >> 8) << 4) | (heightMm >> 8);
  d[15] = 0; // no border
  d[16] = 0;
  // Non-interlaced, no stereo, digital separate sync (bits 4-3 = 11) with the polarities.
  d[17] = 0x18 | (t.vSyncPositive ? 0x04 : 0) | (t.hSyncPositive ? 0x02 : 0);
  return d;
}

/** Active size, totals and clock of the DTD at `offset`, or null when it is a display descriptor. */
export function decodeDtd(
  bytes: Uint8Array,
  offset: number,
): { width: number; height: number; hTotal: number; vTotal: number; pixelClockKhz: number } | null {
  const b = (i: number) => bytes[offset + i] ?? 0;
  const clock = b(0) | (b(1) << 8);
  if (clock === 0) return null;
  const width = b(2) | ((b(4) >> 4) << 8);
  const hBlank = b(3) | ((b(4) & 0x0f) << 8);
  const height = b(5) | ((b(7) >> 4) << 8);
  const vBlank = b(6) | ((b(7) & 0x0f) << 8);
  return {
    width,
    height,
    hTotal: width + hBlank,
    vTotal: height + vBlank,
    pixelClockKhz: clock * 10,
  };
}
