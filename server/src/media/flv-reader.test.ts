import { describe, expect, it } from 'vitest';
import { FlvReader, type FlvUnit } from './flv-reader';
import { ffmpegArgs } from './encoder';

const SPS = Buffer.from([0x67, 0x42, 0xc0, 0x1f, 0xda, 0x01]);
const PPS = Buffer.from([0x68, 0xce, 0x3c, 0x80]);
const IDR = Buffer.from([0x65, 0x88, 0x84, 0x00, 0x10]);
const P = Buffer.from([0x41, 0x9a, 0x02]);
const SEI = Buffer.from([0x06, 0x05, 0x01, 0x80]);

function tag(type: number, ts: number, data: Buffer): Buffer {
  const head = Buffer.alloc(11);
  head[0] = type;
  head.writeUIntBE(data.length, 1, 3);
  head.writeUIntBE(ts & 0xffffff, 4, 3);
  head[7] = (ts >>> 24) & 0xff;
  const prev = Buffer.alloc(4);
  prev.writeUInt32BE(11 + data.length);
  return Buffer.concat([head, data, prev]);
}

function avcc(...nals: Buffer[]): Buffer {
  return Buffer.concat(nals.flatMap((n) => [Buffer.from([0, 0, 0, n.length]), n]));
}

function stream(): Buffer {
  const header = Buffer.from([0x46, 0x4c, 0x56, 1, 1, 0, 0, 0, 9, 0, 0, 0, 0]);
  const config = Buffer.concat([
    Buffer.from([0x17, 0, 0, 0, 0]),
    Buffer.from([1, 0x42, 0xc0, 0x1f, 0xff, 0xe1]),
    Buffer.from([0, SPS.length]),
    SPS,
    Buffer.from([1, 0, PPS.length]),
    PPS,
  ]);
  const script = tag(18, 0, Buffer.from('onMetaData'));
  return Buffer.concat([
    header,
    script,
    tag(9, 0, config),
    tag(9, 0, Buffer.concat([Buffer.from([0x17, 1, 0, 0, 0]), avcc(SEI, IDR)])),
    tag(9, 33, Buffer.concat([Buffer.from([0x27, 1, 0, 0, 0]), avcc(P)])),
    tag(9, 0x01000021, Buffer.concat([Buffer.from([0x27, 1, 0, 0, 0]), avcc(P)])),
  ]);
}

const SC = [0, 0, 0, 1];

describe('FlvReader', () => {
  it('turns video tags into Annex B access units, parameter sets first on key units', () => {
    for (const chunk of [1, 7, 64, 100_000]) {
      const units: FlvUnit[] = [];
      const reader = new FlvReader((u) => units.push(u));
      const all = stream();
      for (let i = 0; i < all.length; i += chunk) reader.push(all.subarray(i, i + chunk));
      expect(
        units.map((u) => u.key),
        `chunk ${chunk}`,
      ).toEqual([true, false, false]);
      expect([...units[0]!.data]).toEqual([
        ...SC,
        ...SPS,
        ...SC,
        ...PPS,
        ...SC,
        ...SEI,
        ...SC,
        ...IDR,
      ]);
      expect([...units[1]!.data]).toEqual([...SC, ...P]);
      expect(units.map((u) => u.ts)).toEqual([0, 33, 0x01000021]);
    }
  });

  it('refuses a stream that is not FLV', () => {
    const reader = new FlvReader(() => undefined);
    expect(() => reader.push(Buffer.from('NOT AN FLV STREAM'))).toThrow(/FLV/);
  });

  it('refuses garbage after a valid header instead of turning it into units', () => {
    const units: FlvUnit[] = [];
    const reader = new FlvReader((u) => units.push(u));
    const good = stream();
    reader.push(good);
    expect(units).toHaveLength(3);
    // A "video tag" whose trailing size field is wrong: bytes that merely look like a tag.
    const bad = tag(9, 66, Buffer.concat([Buffer.from([0x27, 1, 0, 0, 0]), avcc(P)]));
    bad.writeUInt32BE(12345, bad.length - 4);
    expect(() => reader.push(bad)).toThrow(/size/);
    expect(units).toHaveLength(3);
  });

  it('refuses a tag larger than any frame x264 can make, before buffering it', () => {
    const reader = new FlvReader(() => undefined);
    reader.push(stream());
    const head = Buffer.from([9, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0]);
    expect(() => reader.push(head)).toThrow(/bytes/);
  });
});

describe('ffmpegArgs', () => {
  it('maps the streamer parameters onto x264', () => {
    const args = ffmpegArgs({
      width: 1280,
      height: 720,
      format: 'yuv420p',
      fps: 60,
      bitrateKbps: 5000,
      gop: 60,
      processing: 'quality_first',
    }).join(' ');
    expect(args).toContain('-s 1280x720 -framerate 60');
    expect(args).toContain('-preset veryfast -tune zerolatency');
    expect(args).toContain('-profile:v baseline');
    expect(args).toContain('-b:v 5000k -maxrate 5000k -bufsize 5000k');
    expect(args).toContain('keyint=60:min-keyint=60:scenecut=0');
    expect(args).toContain('-f flv pipe:1');
    const low = ffmpegArgs({
      width: 640,
      height: 480,
      format: 'bgr0',
      fps: 30,
      bitrateKbps: 500,
      gop: 0,
      processing: 'low_latency_first',
    }).join(' ');
    expect(low).toContain('-pix_fmt bgr0');
    expect(low).toContain('-preset ultrafast');
    expect(low).toContain('-bufsize 250k');
    expect(low).toContain('keyint=infinite');
  });
});
