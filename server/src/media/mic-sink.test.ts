import { execFile } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DisabledAudio } from '../drivers/audio/disabled';
import { HEARD_THRESHOLD, TestbedAudio } from '../drivers/audio/testbed';
import { s16, toneLevel } from '../drivers/audio/tone';
import { SILENT_LOGGER } from '../log';
import { freshBacklog, MicSink, micSinkArgs } from './mic-sink';
import { OggOpusReader } from './ogg';
import { OpusPacketizer } from './opus-rtp';

/** Opus packets of a sine, as a browser's encoder would send them. */
function opusTone(hz: number, seconds: number): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    execFile(
      'ffmpeg',
      ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i'].concat(
        // amplitude 0.5 (the filter's default is 1/8)
        [
          `sine=frequency=${hz}:sample_rate=48000:duration=${seconds}`,
          '-af',
          'volume=4',
          '-ac',
          '2',
        ],
        ['-c:a', 'libopus', '-frame_duration', '20', '-f', 'ogg', 'pipe:1'],
      ),
      { encoding: 'buffer', timeout: 20_000, maxBuffer: 16 << 20 },
      (err, stdout) => (err ? reject(err) : resolve(new OggOpusReader().push(stdout))),
    );
  });
}

let tone600: Buffer[];
let tone900: Buffer[];
beforeAll(async () => {
  [tone600, tone900] = await Promise.all([opusTone(600, 1), opusTone(900, 1)]);
}, 60_000);

const sinks: MicSink[] = [];
afterEach(async () => {
  await Promise.all(sinks.splice(0).map((s) => s.dispose()));
});

function rtp(packets: Buffer[], ssrc: number): Buffer[] {
  const p = new OpusPacketizer({ ssrc });
  return packets.map((o) => p.packetize(o)!);
}

describe('micSinkArgs', () => {
  it('decodes Ogg from stdin with no buffering, then the playback arguments', () => {
    const args = micSinkArgs(['-f', 's16le', 'pipe:1']);
    expect(args.join(' ')).toContain('-f ogg -i pipe:0');
    expect(args.slice(-3)).toEqual(['-f', 's16le', 'pipe:1']);
  });
});

describe('freshBacklog', () => {
  it('keeps what arrived within the window of the newest packet, in order', () => {
    const held = [0, 100, 250, 290, 300, 310].map((at, i) => ({ at, i }));
    expect(freshBacklog(held, 60).map((p) => p.i)).toEqual([2, 3, 4, 5]);
    expect(freshBacklog([], 60)).toEqual([]);
    // a burst (one arrival time) is kept whole
    expect(freshBacklog([{ at: 5 }, { at: 5 }], 60)).toHaveLength(2);
  });
});

/**
 * How long a decoder takes from the first packet to sound the testbed hears, measured on a
 * 2-core machine: 185-203 ms quiet, 187-292 ms beside 4 busy processes, 668-1,871 ms beside 10
 * (load 14). Waits are polls bounded by ten times the worst of those.
 */
const HEAR_DEADLINE_MS = 20_000;
/** A test that waits for a decoder once or twice, with that deadline each time. */
const DECODER_TEST_MS = 60_000;

/**
 * The testbed's decoded microphone as one stream, in the order the decoder wrote it: the level
 * of each frequency in each 20 ms window. Order, not arrival time, tells whose packets a window
 * holds: the decoder is one ffmpeg whose input is the sink's packets in the order it took them.
 */
function recordDecoded(driver: TestbedAudio, freqs: number[]): () => number[][] {
  const chunks: Buffer[] = [];
  const playback = driver.playback.bind(driver);
  driver.playback = () => {
    const p = playback();
    const drain = p.drain!;
    return {
      ...p,
      drain: (stdout) => {
        const tee = new PassThrough();
        const onData = (c: Buffer) => {
          chunks.push(c);
          tee.write(c);
        };
        stdout.on('data', onData);
        const stop = drain(tee);
        return () => {
          stdout.off('data', onData);
          stop();
        };
      },
    };
  };
  const window = 960 * 2;
  return () => {
    const pcm = s16(Buffer.concat(chunks));
    const out: number[][] = [];
    for (let i = 0; i + window <= pcm.length; i += window) {
      const w = pcm.subarray(i, i + window);
      out.push(freqs.map((hz) => toneLevel(w, 48_000, 2, hz)));
    }
    return out;
  };
}

describe('MicSink', () => {
  it(
    'plays a microphone to the testbed, which hears it, and stops after the idle time',
    async () => {
      const driver = new TestbedAudio();
      const idleMs = 300;
      const sink = new MicSink(driver, SILENT_LOGGER, { idleMs });
      sinks.push(sink);
      const active: boolean[] = [];
      sink.on('active', (a) => active.push(a));
      const mark = driver.mark();
      const packets = rtp(tone600, 1);
      // a second's packets at once, before ffmpeg can have started: those over MAX_PENDING (50)
      // are dropped, the rest wait for it
      for (const packet of packets) sink.push('peer-a', packet);
      expect(sink.active).toBe(true);
      expect(sink.sender).toBe('peer-a');
      expect([sink.stats.packets, sink.stats.dropped]).toEqual([0, packets.length - 50]);
      // then a packet every 20 ms, as a microphone sends them, until the sound is heard: the
      // idle time counts from the last packet, and a loaded machine starts ffmpeg in more than
      // 300 ms (see HEAR_DEADLINE_MS)
      let next = 0;
      let last = performance.now();
      const pacer = setInterval(() => {
        sink.push('peer-a', packets[next++ % packets.length]!);
        last = performance.now();
      }, 20);
      try {
        await vi.waitFor(() => expect(driver.heard(600).at).not.toBeNull(), {
          timeout: HEAR_DEADLINE_MS,
        });
      } finally {
        clearInterval(pacer);
      }
      expect(driver.heard(600).at!).toBeGreaterThan(mark);
      expect(sink.stats.packets).toBeGreaterThanOrEqual(50);
      expect(sink.stats.refused).toBe(0);
      expect(sink.pid).not.toBeNull();
      await vi.waitFor(() => expect(sink.active).toBe(false), { timeout: HEAR_DEADLINE_MS });
      // not before the idle time after the last packet (the timer's own granularity aside)
      expect(performance.now() - last).toBeGreaterThanOrEqual(idleMs - 5);
      expect(sink.pid).toBeNull();
      expect(active).toEqual([true, false]);
    },
    DECODER_TEST_MS,
  );

  it(
    'lets the newest sender take over and ignores the one it replaced',
    async () => {
      const driver = new TestbedAudio();
      const decoded = recordDecoded(driver, [600, 900]);
      // the idle stop is not what this test is about
      const sink = new MicSink(driver, SILENT_LOGGER, { idleMs: DECODER_TEST_MS });
      sinks.push(sink);
      const a = rtp(tone600, 1);
      const b = rtp(tone900, 2);
      for (const packet of a.slice(0, 25)) sink.push('peer-a', packet);
      await vi.waitFor(() => expect(driver.heard(600).at).not.toBeNull(), {
        timeout: HEAR_DEADLINE_MS,
      });
      for (const packet of b.slice(0, 25)) sink.push('peer-b', packet);
      expect(sink.sender).toBe('peer-b');
      const refused = sink.stats.refused;
      for (const packet of a.slice(25)) sink.push('peer-a', packet);
      expect(sink.stats.refused).toBe(refused + a.length - 25);
      // some of peer-a's 25 packets, taken before the takeover, may still be decoding now: the
      // decoded stream, in order, is peer-a's 0.5 s and then peer-b's, and once peer-b's sound
      // begins no 600 Hz follows (a sink that let peer-a's later packets through would put them
      // after peer-b's first ones). 49 windows: 50 packets less Opus's 6.5 ms pre-skip.
      await vi.waitFor(() => expect(decoded().length).toBeGreaterThanOrEqual(49), {
        timeout: HEAR_DEADLINE_MS,
      });
      const windows = decoded();
      const takeover = windows.findIndex(([, l900]) => l900! >= HEARD_THRESHOLD);
      expect(takeover).toBeGreaterThanOrEqual(20);
      expect(windows.slice(0, takeover).every(([l600]) => l600! >= HEARD_THRESHOLD)).toBe(true);
      const after = windows.slice(takeover);
      expect(after.filter(([l600]) => l600! >= HEARD_THRESHOLD)).toEqual([]);
      expect(after.filter(([, l900]) => l900! >= HEARD_THRESHOLD).length).toBeGreaterThanOrEqual(
        24,
      );
      // the current sender's peer closes: the sound stops at once
      sink.senderGone('peer-b');
      expect(sink.active).toBe(false);
      await vi.waitFor(() => expect(sink.pid).toBeNull(), { timeout: HEAR_DEADLINE_MS });
      // peer-a is still ignored until its own peer closes
      sink.push('peer-a', a[30]!);
      expect(sink.active).toBe(false);
      sink.senderGone('peer-a');
      sink.push('peer-a', a[31]!);
      expect(sink.sender).toBe('peer-a');
    },
    DECODER_TEST_MS,
  );

  it(
    'starts a new decoder for a sender that begins while the old one stops',
    async () => {
      const driver = new TestbedAudio();
      const sink = new MicSink(driver, SILENT_LOGGER, { idleMs: DECODER_TEST_MS });
      sinks.push(sink);
      for (const packet of rtp(tone600, 1).slice(0, 10)) sink.push('peer-a', packet);
      await vi.waitFor(() => expect(sink.pid).not.toBeNull(), { timeout: HEAR_DEADLINE_MS });
      const first = sink.pid;
      driver.mark();
      sink.senderGone('peer-a');
      for (const packet of rtp(tone900, 2)) sink.push('peer-b', packet);
      expect(sink.sender).toBe('peer-b');
      await vi.waitFor(() => expect(driver.heard(900).at).not.toBeNull(), {
        timeout: HEAR_DEADLINE_MS,
      });
      expect(sink.pid).not.toBe(first);
    },
    DECODER_TEST_MS,
  );

  it('refuses what is not Opus RTP, and any microphone on a target without one', () => {
    const sink = new MicSink(new TestbedAudio(), SILENT_LOGGER);
    sinks.push(sink);
    sink.push('x', Buffer.from('not rtp at all'));
    const wrongType = new OpusPacketizer({ ssrc: 1, payloadType: 96 }).packetize(tone600[0]!)!;
    sink.push('x', wrongType);
    const empty = new OpusPacketizer({ ssrc: 1 }).packetize(Buffer.from([0x0b]));
    expect(empty).toBeNull();
    expect(sink.stats.refused).toBe(2);
    expect(sink.active).toBe(false);

    const none = new MicSink(new DisabledAudio(), SILENT_LOGGER);
    sinks.push(none);
    none.push('x', rtp(tone600, 1)[0]!);
    expect([none.active, none.pid, none.stats.refused]).toEqual([false, null, 1]);
  });
});
