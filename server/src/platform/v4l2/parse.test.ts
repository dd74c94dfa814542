import { describe, expect, it } from 'vitest';
import {
  edidHexDump,
  failureLine,
  faultOf,
  ffmpegFormatOf,
  parseDvTimings,
  parseEdidHexDump,
  parseFormat,
  parseFormats,
} from './parse';
import * as rec from './recorded.test-support';

describe('v4l2-ctl parsers (outputs recorded from vivid)', () => {
  it('reads DV timings: size, totals, pixel clock and refresh', () => {
    expect(parseDvTimings(rec.QUERY_720P)).toEqual({
      width: 1280,
      height: 720,
      totalWidth: 1650,
      totalHeight: 750,
      interlaced: false,
      pixelclock: 74_250_000,
      fps: 60,
    });
    expect(parseDvTimings(`DV timings:\n${rec.QUERY_1080P}`)).toMatchObject({
      width: 1920,
      height: 1080,
      fps: 60,
    });
  });

  it('computes the refresh from the pixel clock when v4l2-ctl gives none', () => {
    const text = rec.QUERY_1080P.replace(' (60.00 frames per second)', '');
    expect(parseDvTimings(text)?.fps).toBe(60);
  });

  it('takes zeroes (what a failed query prints) and garbage as no timings', () => {
    expect(parseDvTimings(rec.QUERY_ZEROES)).toBeNull();
    expect(parseDvTimings('')).toBeNull();
    expect(parseDvTimings('\tActive width: banana\n\tActive height: 7\n')).toBeNull();
  });

  it('maps each failure text to its fault', () => {
    expect(faultOf(rec.QUERY_NO_SIGNAL)).toBe('no_signal');
    expect(faultOf(rec.QUERY_NO_LOCK)).toBe('no_lock');
    expect(faultOf(rec.QUERY_OUT_OF_RANGE)).toBe('out_of_range');
    expect(faultOf(rec.SET_BUSY)).toBe('busy');
    expect(faultOf(rec.QUERY_DONGLE)).toBe('unsupported');
    expect(faultOf(rec.GET_EDID_NONE)).toBe('unsupported');
    expect(faultOf(rec.NO_DEVICE)).toBe('no_device');
    expect(faultOf('something else entirely')).toBe('error');
    expect(failureLine(`${rec.QUERY_ZEROES}\n${rec.QUERY_NO_LOCK}`)).toBe(
      'VIDIOC_QUERY_DV_TIMINGS: failed: No locks available',
    );
  });

  it('reads the capture format', () => {
    expect(parseFormat(rec.FMT_720P)).toEqual({ width: 1280, height: 720, fourcc: 'YUYV' });
    expect(parseFormat('nothing')).toBeNull();
  });

  it('reads formats with their sizes and rates', () => {
    const vivid = parseFormats(rec.LIST_FORMATS_VIVID);
    expect(vivid.map((f) => f.fourcc)).toEqual(['YUYV', 'UYVY', 'NV12', 'RGB3']);
    const dongle = parseFormats(rec.LIST_FORMATS_DONGLE);
    expect(dongle[0]).toEqual({
      fourcc: 'MJPG',
      sizes: [
        { width: 1920, height: 1080, fps: [30] },
        { width: 1280, height: 720, fps: [60, 30] },
        { width: 640, height: 480, fps: [60] },
      ],
    });
    expect(dongle[1]?.sizes[0]).toEqual({ width: 1920, height: 1080, fps: [5] });
    expect(ffmpegFormatOf('MJPG')).toBe('mjpeg');
    expect(ffmpegFormatOf('BA81')).toBeNull();
  });

  it('reads an EDID hex dump and writes one v4l2-ctl reads back the same', () => {
    const bytes = parseEdidHexDump(rec.VIVID_EDID_HEX);
    expect(bytes?.length).toBe(256);
    expect(bytes?.subarray(0, 8).toString('hex')).toBe('00ffffffffffff00');
    expect(parseEdidHexDump(edidHexDump(bytes!))).toEqual(bytes);
    expect(edidHexDump(bytes!).split('\n')[0]).toBe(
      '00 ff ff ff ff ff ff 00 31 d8 34 12 00 00 00 00',
    );
    expect(parseEdidHexDump('')).toBeNull();
    expect(parseEdidHexDump('00 ff zz')).toBeNull();
  });
});
