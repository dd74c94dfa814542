import { execFile } from 'node:child_process';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { NoAudio } from '../drivers/audio/none';
import { TestbedAudio } from '../drivers/testbed/audio';
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
});

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

describe('MicSink', () => {
  it('plays a microphone to the testbed, which hears it, and stops after the idle time', async () => {
    const driver = new TestbedAudio();
    const sink = new MicSink(driver, SILENT_LOGGER, { idleMs: 300 });
    sinks.push(sink);
    const active: boolean[] = [];
    sink.on('active', (a) => active.push(a));
    const mark = driver.mark();
    for (const packet of rtp(tone600, 1)) sink.push('peer-a', packet);
    expect(sink.active).toBe(true);
    expect(sink.sender).toBe('peer-a');
    await vi.waitFor(() => expect(driver.heard(600).at).not.toBeNull(), { timeout: 10_000 });
    expect(driver.heard(600).at!).toBeGreaterThan(mark);
    // a second's packets at once: those over MAX_PENDING while ffmpeg starts are dropped
    expect(sink.stats.packets + sink.stats.dropped).toBe(tone600.length);
    expect(sink.stats.packets).toBeGreaterThanOrEqual(50);
    expect(sink.stats.refused).toBe(0);
    const pid = sink.pid;
    expect(pid).not.toBeNull();
    await vi.waitFor(() => expect(sink.active).toBe(false), { timeout: 3000 });
    expect(sink.pid).toBeNull();
    expect(active).toEqual([true, false]);
  });

  it('lets the newest sender take over and ignores the one it replaced', async () => {
    const driver = new TestbedAudio();
    const sink = new MicSink(driver, SILENT_LOGGER, { idleMs: 5000 });
    sinks.push(sink);
    const a = rtp(tone600, 1);
    const b = rtp(tone900, 2);
    for (const packet of a.slice(0, 25)) sink.push('peer-a', packet);
    await vi.waitFor(() => expect(driver.heard(600).at).not.toBeNull(), { timeout: 10_000 });
    driver.mark();
    for (const packet of b.slice(0, 25)) sink.push('peer-b', packet);
    expect(sink.sender).toBe('peer-b');
    const refused = sink.stats.refused;
    for (const packet of a.slice(25)) sink.push('peer-a', packet);
    expect(sink.stats.refused).toBe(refused + a.length - 25);
    await vi.waitFor(() => expect(driver.heard(900).at).not.toBeNull(), { timeout: 10_000 });
    expect(driver.heard(600).at).toBeNull();
    // the current sender's peer closes: the sound stops at once
    sink.senderGone('peer-b');
    expect(sink.active).toBe(false);
    await vi.waitFor(() => expect(sink.pid).toBeNull());
    // peer-a is still ignored until its own peer closes
    sink.push('peer-a', a[30]!);
    expect(sink.active).toBe(false);
    sink.senderGone('peer-a');
    sink.push('peer-a', a[31]!);
    expect(sink.sender).toBe('peer-a');
  });

  it('starts a new decoder for a sender that begins while the old one stops', async () => {
    const driver = new TestbedAudio();
    const sink = new MicSink(driver, SILENT_LOGGER, { idleMs: 5000 });
    sinks.push(sink);
    for (const packet of rtp(tone600, 1).slice(0, 10)) sink.push('peer-a', packet);
    await vi.waitFor(() => expect(sink.pid).not.toBeNull(), { timeout: 10_000 });
    const first = sink.pid;
    driver.mark();
    sink.senderGone('peer-a');
    for (const packet of rtp(tone900, 2)) sink.push('peer-b', packet);
    expect(sink.sender).toBe('peer-b');
    await vi.waitFor(() => expect(driver.heard(900).at).not.toBeNull(), { timeout: 10_000 });
    expect(sink.pid).not.toBe(first);
  });

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

    const none = new MicSink(new NoAudio(), SILENT_LOGGER);
    sinks.push(none);
    none.push('x', rtp(tone600, 1)[0]!);
    expect([none.active, none.pid, none.stats.refused]).toEqual([false, null, 1]);
  });
});
