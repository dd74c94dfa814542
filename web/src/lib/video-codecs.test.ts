import { describe, expect, it } from 'vitest';
import { receiveVideoCodecs } from './video-codecs';

const caps = (...mimeTypes: string[]): RTCRtpCapabilities => ({
  codecs: mimeTypes.map((mimeType) => ({ mimeType, clockRate: 90_000 })),
  headerExtensions: [],
});

describe('receiveVideoCodecs', () => {
  it('lists H.265 before H.264 when the browser receives both', () => {
    expect(receiveVideoCodecs(caps('video/VP8', 'video/H264', 'video/H265'))).toEqual([
      'h265',
      'h264',
    ]);
  });

  it("lists H.264 alone where the browser has no H.265 (Debian's Chromium here)", () => {
    expect(receiveVideoCodecs(caps('video/VP8', 'video/H264', 'video/AV1'))).toEqual(['h264']);
  });

  it('says nothing when the browser cannot tell', () => {
    expect(receiveVideoCodecs(null)).toBeNull();
  });
});
