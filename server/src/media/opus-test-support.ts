/**
 * Tests only: Opus packets (20 ms each unless told) decoded back to 48 kHz stereo PCM by a real
 * ffmpeg, through our own Ogg writer, to look for a tone in what the pipeline sent.
 */
import { execFile } from 'node:child_process';
import { s16 } from '../drivers/audio/tone';
import { OggOpusWriter } from './ogg';

export function decodeOpus(
  packets: Array<{ data: Buffer; samples?: number }>,
): Promise<Int16Array> {
  const w = new OggOpusWriter(1);
  const ogg = Buffer.concat([
    w.headers(),
    ...packets.map((p) => w.packet(p.data, p.samples ?? 960)),
  ]);
  return new Promise((resolve, reject) => {
    const child = execFile(
      'ffmpeg',
      ['-hide_banner', '-loglevel', 'error', '-f', 'ogg', '-i', 'pipe:0'].concat([
        '-f',
        's16le',
        '-ar',
        '48000',
        '-ac',
        '2',
        'pipe:1',
      ]),
      { encoding: 'buffer', timeout: 20_000, maxBuffer: 64 << 20 },
      (err, stdout) => (err ? reject(err) : resolve(s16(stdout))),
    );
    child.stdin!.end(ogg);
  });
}
