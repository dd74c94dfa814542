import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { SILENT_LOGGER } from '../log';
import { until } from '../platform/gadget/test-support';
import {
  CameraSink,
  ivfHeader,
  parseRtp,
  parseVp8Descriptor,
  type CameraFrameTarget,
} from './camera-sink';

const W = 64;
const H = 48;

/** VP8 frames of ffmpeg's moving test pattern (libvpx), from its IVF output. */
function vp8Frames(count: number, keyEvery = 1000): Buffer[] {
  const r = spawnSync(
    'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      'lavfi',
      '-i',
      'testsrc=size=160x120:rate=15',
      '-frames:v',
      String(count),
      '-c:v',
      'libvpx',
      '-g',
      String(keyEvery),
      '-b:v',
      '300k',
      '-f',
      'ivf',
      'pipe:1',
    ],
    { maxBuffer: 64 << 20 },
  );
  if (r.status !== 0) throw new Error(`ffmpeg: ${r.stderr}`);
  const out: Buffer[] = [];
  for (let i = 32; i + 12 <= r.stdout.length;) {
    const size = r.stdout.readUInt32LE(i);
    out.push(r.stdout.subarray(i + 12, i + 12 + size));
    i += 12 + size;
  }
  return out;
}

/** RFC 7741 packets of one frame: a 1-byte descriptor (S on the first), marker on the last. */
function packetize(frame: Buffer, seq0: number, ts: number, mtu = 300): Buffer[] {
  const pkts: Buffer[] = [];
  for (let o = 0, n = 0; o < frame.length; o += mtu, n += 1) {
    const chunk = frame.subarray(o, o + mtu);
    const h = Buffer.alloc(13);
    h[0] = 0x80;
    h[1] = 98 | (o + mtu >= frame.length ? 0x80 : 0);
    h.writeUInt16BE((seq0 + n) & 0xffff, 2);
    h.writeUInt32BE(ts >>> 0, 4);
    h.writeUInt32BE(0x1234, 8);
    h[12] = o === 0 ? 0x10 : 0x00;
    pkts.push(Buffer.concat([h, chunk]));
  }
  return pkts;
}

class Target implements CameraFrameTarget {
  readonly frameSize = W * H * 2;
  readonly size = { width: W, height: H };
  frames: Buffer[] = [];
  active = new Map<string, boolean>();
  pushFrame(frame: Buffer): boolean {
    this.frames.push(Buffer.from(frame));
    return true;
  }
  setActive(sender: string, active: boolean): void {
    this.active.set(sender, active);
  }
}

let sink: CameraSink | null = null;
afterEach(async () => {
  await sink?.dispose();
  sink = null;
});

describe('CameraSink: the browser camera’s VP8 to the webcam’s YUYV frames', () => {
  it('reassembles the RTP frames, decodes them and hands whole frames of the moving pattern on', async () => {
    const target = new Target();
    const keys: string[] = [];
    sink = new CameraSink(target, SILENT_LOGGER, { keyFrame: (s) => keys.push(s) });
    const frames = vp8Frames(20);
    let seq = 65530; // wraps
    for (const [i, f] of frames.entries()) {
      for (const p of packetize(f, seq, i * 6000)) {
        sink.push('peer-1', p);
        seq += 1;
      }
    }
    expect(keys).toEqual(['peer-1']);
    expect(target.active.get('peer-1')).toBe(true);
    expect(sink.stats.frames).toBe(20);
    // the decoder holds back at most a frame or two while the stream stays open
    await until(() => target.frames.length >= 15, 45_000);
    for (const f of target.frames) expect(f.length).toBe(W * H * 2);
    // the pattern moves: the frames are not all the same, and not black
    const sums = new Set(target.frames.map((f) => createHash('sha1').update(f).digest('hex')));
    expect(sums.size).toBeGreaterThan(5);
    const luma = target.frames[0]!.filter((_, i) => i % 2 === 0);
    expect(luma.reduce((a, b) => a + b, 0) / luma.length).toBeGreaterThan(40);
  }, 60_000);

  it('a lost packet: a key frame is asked for and the frames that depend on it are skipped', async () => {
    const target = new Target();
    const keys: string[] = [];
    sink = new CameraSink(target, SILENT_LOGGER, { keyFrame: (s) => keys.push(s) });
    const frames = vp8Frames(12, 6); // key frames at 0 and 6
    let seq = 100;
    for (const [i, f] of frames.entries()) {
      const pkts = packetize(f, seq, i * 6000, 100);
      seq += pkts.length;
      // frame 2 loses its second packet
      for (const [j, p] of pkts.entries()) if (!(i === 2 && j === 1)) sink.push('p', p);
    }
    expect(keys).toEqual(['p', 'p']);
    // 0, 1 and then 6..11: frame 2 never completes, 3..5 need it
    expect(sink.stats.frames).toBe(8);
    expect(sink.stats.dropped).toBe(3);
  }, 60_000);

  it('the newest sender takes over; the replaced one is ignored; a sender that goes is inactive', () => {
    const target = new Target();
    sink = new CameraSink(target, SILENT_LOGGER, { keyFrame: () => undefined });
    const pkt = packetize(Buffer.from([0x01, 2, 3]), 1, 0)[0]!;
    sink.push('a', pkt);
    sink.push('b', pkt);
    expect(target.active.get('a')).toBe(false);
    expect(target.active.get('b')).toBe(true);
    sink.push('a', pkt);
    expect(target.active.get('a')).toBe(false);
    sink.senderGone('b');
    expect(target.active.get('b')).toBe(false);
  });

  it('parses RTP with CSRCs, an extension and padding, and the VP8 descriptor’s optional bytes', () => {
    const rtp = Buffer.from([
      0xb1, 0xe2, 0, 7, 0, 0, 0, 9, 0, 0, 0, 5, /* csrc */ 0, 0, 0, 1, /* ext */ 0xbe, 0xde, 0, 1,
      1, 2, 3, 4, /* payload */ 0x90, 0xe0, 0x81, 0x23, 0x11, 0x22, 0xaa, /* padding */ 0, 2,
    ]);
    const p = parseRtp(rtp)!;
    expect(p).toMatchObject({ marker: true, seq: 7, ts: 9, ssrc: 5 });
    // X=1, S=1; I (16-bit picture id), L, T/K bytes
    const d = parseVp8Descriptor(p.payload)!;
    expect(d.start).toBe(true);
    expect([...d.data]).toEqual([0xaa]);
    expect(parseRtp(Buffer.from([0x40, 0, 0]))).toBeNull();
    expect(ivfHeader(640, 480).subarray(0, 4).toString()).toBe('DKIF');
  });
});
