import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { dominantFrequency, s16 } from '../drivers/audio/tone';
import { OggOpusReader, OggOpusWriter, oggCrc, oggPage, opusHead, opusTags } from './ogg';
import { opusPacketSamples } from './opus-rtp';

function ffmpeg(args: string[], input?: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'ffmpeg',
      ['-hide_banner', '-loglevel', 'error', ...args],
      { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024, timeout: 20_000 },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
    if (input) child.stdin!.end(input);
  });
}

/** A page with the given lacing values and body, as another muxer would write it. */
function rawPage(flags: number, sequence: number, lacing: number[], body: Buffer): Buffer {
  const header = Buffer.alloc(27 + lacing.length);
  header.write('OggS', 0, 'latin1');
  header[5] = flags;
  header.writeUInt32LE(7, 14);
  header.writeUInt32LE(sequence, 18);
  header[26] = lacing.length;
  Buffer.from(lacing).copy(header, 27);
  const page = Buffer.concat([header, body]);
  page.writeUInt32LE(oggCrc(page), 22);
  return page;
}

describe('oggCrc', () => {
  it('is CRC-32 with polynomial 0x04C11DB7, initial 0, no reflection, no final xor', () => {
    // CRC-32/POSIX (cksum) of the check string is 0x765E7680; it differs only by the final xor
    expect(oggCrc(Buffer.from('123456789'))).toBe(0x89a1897f);
    expect(oggCrc(Buffer.alloc(0))).toBe(0);
  });
});

describe('oggPage', () => {
  it('writes the header byte for byte and laces 255-byte multiples with a closing 0', () => {
    const page = oggPage(1, 2, 0, 960n, [Buffer.from([0xaa, 0xbb, 0xcc])]);
    expect(page.subarray(0, 22).toString('hex')).toBe(
      '4f676753' + '00' + '00' + 'c003000000000000' + '01000000' + '02000000',
    );
    expect(page.subarray(26).toString('hex')).toBe('01' + '03' + 'aabbcc');
    const zeroed = Buffer.from(page);
    zeroed.writeUInt32LE(0, 22);
    expect(page.readUInt32LE(22)).toBe(oggCrc(zeroed));

    const big = oggPage(1, 0, 0, 0n, [Buffer.alloc(510), Buffer.alloc(600)]);
    expect([...big.subarray(27, 27 + big[26]!)]).toEqual([255, 255, 0, 255, 255, 90]);
    expect(() => oggPage(1, 0, 0, 0n, [Buffer.alloc(255 * 255)])).toThrow(RangeError);
  });

  it('writes OpusHead and OpusTags as RFC 7845 lays them out', () => {
    expect(opusHead(2, 312, 48000).toString('hex')).toBe(
      Buffer.from('OpusHead').toString('hex') + '01' + '02' + '3801' + '80bb0000' + '0000' + '00',
    );
    expect(opusTags('kvm').toString('hex')).toBe(
      Buffer.from('OpusTags').toString('hex') + '03000000' + '6b766d' + '00000000',
    );
  });
});

describe('OggOpusReader', () => {
  it("reads ffmpeg's Ogg Opus into 20 ms packets, headers skipped, in any chunking", async () => {
    const ogg = await ffmpeg([
      '-f', 'lavfi', '-i', 'sine=frequency=1000:sample_rate=48000:duration=0.5',
      '-ac', '2', '-c:a', 'libopus', '-frame_duration', '20', '-f', 'ogg', 'pipe:1',
    ]); // prettier-ignore
    const whole = new OggOpusReader();
    const packets = whole.push(ogg);
    expect(whole.stats.badPages).toBe(0);
    // 0.5 s in 20 ms frames (the encoder's look-ahead may add one)
    expect(packets.length).toBeGreaterThanOrEqual(25);
    expect(packets.length).toBeLessThanOrEqual(27);
    expect(packets.every((p) => opusPacketSamples(p) === 960)).toBe(true);

    const chunked = new OggOpusReader();
    const again: Buffer[] = [];
    for (let i = 0; i < ogg.length; i += 7) again.push(...chunked.push(ogg.subarray(i, i + 7)));
    expect(again).toEqual(packets);
  });

  it('refuses a page with a bad CRC and keeps reading after it', () => {
    const w = new OggOpusWriter(5);
    const pages = [
      w.headers(),
      w.packet(Buffer.from([0xf8, 1]), 960),
      w.packet(Buffer.from([0xf8, 2]), 960),
      w.packet(Buffer.from([0xf8, 3]), 960),
    ];
    const broken = pages[2]!;
    broken[broken.length - 1]! ^= 0xff;
    const r = new OggOpusReader();
    const got = r.push(Buffer.concat([Buffer.from('junk'), ...pages]));
    expect(got.map((p) => p[1])).toEqual([1, 3]);
    expect(r.stats.badPages).toBeGreaterThanOrEqual(2);
  });

  it('joins a packet spanning pages and drops one whose start was lost', () => {
    const head = rawPage(2, 0, [19], opusHead(2, 0, 48000));
    const tags = rawPage(0, 1, [15], opusTags('abc'));
    const first = rawPage(0, 2, [255], Buffer.alloc(255, 0x11));
    const rest = rawPage(
      1,
      3,
      [10, 2],
      Buffer.concat([Buffer.alloc(10, 0x22), Buffer.from([9, 9])]),
    );
    const r = new OggOpusReader();
    const got = r.push(Buffer.concat([head, tags, first, rest]));
    expect(got.map((p) => p.length)).toEqual([265, 2]);
    expect(got[0]!.subarray(250, 260).toString('hex')).toBe('11111111112222222222');

    // the continuation alone: its first packet is incomplete and dropped
    const lost = new OggOpusReader();
    expect(lost.push(Buffer.concat([head, tags, rest])).map((p) => p.length)).toEqual([2]);
  });
});

describe('OggOpusWriter', () => {
  it('writes a stream ffmpeg decodes back to the same tone', async () => {
    const ogg = await ffmpeg([
      '-f', 'lavfi', '-i', 'sine=frequency=700:sample_rate=48000:duration=0.6',
      '-ac', '2', '-c:a', 'libopus', '-frame_duration', '20', '-f', 'ogg', 'pipe:1',
    ]); // prettier-ignore
    const packets = new OggOpusReader().push(ogg);
    const w = new OggOpusWriter(0x1234);
    const out = Buffer.concat([w.headers(), ...packets.map((p) => w.packet(p, 960))]);
    // our own reader takes it back whole, every CRC right
    const r = new OggOpusReader();
    expect(r.push(out)).toEqual(packets);
    expect(r.stats.badPages).toBe(0);
    const pcm = await ffmpeg(
      ['-f', 'ogg', '-i', 'pipe:0', '-f', 's16le', '-ar', '48000', '-ac', '2', 'pipe:1'],
      out,
    );
    const mid = s16(pcm.subarray(48000 * 4 * 0.1, 48000 * 4 * 0.5));
    expect(dominantFrequency(mid, 48000, 2).hz).toBe(700);
  });
});
