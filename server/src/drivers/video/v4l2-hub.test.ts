/**
 * The V4L2 driver under the real video hub and ffmpeg: a viewer subscribed before new DV timings
 * keeps its subscription and gets the stream at the new size. ffmpeg is a wrapper that reads
 * ffmpeg's test pattern at the `-video_size` asked where the driver asks for `-f v4l2` (the host
 * has no capture device); the fake receiver answers EBUSY to new timings while an encoder runs,
 * as vivid does while a reader streams.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { SILENT_LOGGER } from '../../log';
import { NalType, nalType, parseSps, splitNalUnits } from '../../media/annexb';
import type { AccessUnit } from '../../media/types';
import { VideoHub } from '../../media/video-hub';
import { V4l2Ctl } from '../../platform/v4l2/ctl';
import { FakeReceiver, T1080 } from '../../platform/v4l2/fake.test-support';
import { V4l2Video } from './v4l2';

const WRAPPER = `#!/bin/bash
out=(); v4l2=; size=; done=
while [ $# -gt 0 ]; do
  case "$1" in
    -f) if [ "$2" = v4l2 ]; then v4l2=1; shift 2; continue; fi ;;
    -input_format) if [ -n "$v4l2" ]; then shift 2; continue; fi ;;
    -video_size) if [ -n "$v4l2" ]; then size=$2; shift 2; continue; fi ;;
    -i) if [ -n "$v4l2" ] && [ -z "$done" ]; then
          out+=(-re -f lavfi -i "testsrc=size=$size:rate=30"); done=1; shift 2; continue
        fi ;;
  esac
  out+=("$1"); shift
done
exec ffmpeg "\${out[@]}"
`;

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

function spsSize(unit: AccessUnit): { width: number; height: number } | null {
  const sps = splitNalUnits(unit.data).find((n) => nalType(n) === NalType.sps);
  return sps ? parseSps(sps) : null;
}

it('a viewer keeps its subscription through new timings and gets the stream at the new size', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kvm-v4l2-hub-'));
  const device = join(dir, 'video0');
  const ffmpeg = join(dir, 'ffmpeg');
  await writeFile(device, '');
  await writeFile(ffmpeg, WRAPPER);
  await chmod(ffmpeg, 0o755);
  const fake = new FakeReceiver();
  const ctl = new V4l2Ctl({ device, run: fake.run, spawnWait: fake.spawnWait });
  const video = new V4l2Video({ ctl, busyRetryMs: 20 });
  await video.init();
  const hub = new VideoHub(
    video,
    { bitrateKbps: 300, gop: 10, fps: 30, processing: 'low_latency_first' },
    SILENT_LOGGER,
    { ffmpeg, lingerMs: 60_000, encoderStartMinMs: 0 },
  );
  // an ffmpeg reading the device holds it, as a streaming reader holds vivid
  const readers = new Set<number>();
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  fake.busy = () => [...readers].some(alive);
  cleanup.push(async () => {
    await hub.dispose();
    await video.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  const sizes: string[] = [];
  let units = 0;
  const unsubscribe = hub.subscribe((unit) => {
    units += 1;
    if (hub.encoderPid !== null) readers.add(hub.encoderPid);
    const size = spsSize(unit);
    if (size) sizes.push(`${size.width}x${size.height}`);
  });
  cleanup.push(async () => unsubscribe());
  await vi.waitFor(() => expect(sizes).toContain('1280x720'), { timeout: 20_000, interval: 50 });

  fake.detected = T1080;
  fake.sourceChange();
  await vi.waitFor(() => expect(sizes).toContain('1920x1080'), { timeout: 30_000, interval: 50 });
  // the same subscription all along, the device set only once the old encoder let go of it
  expect(hub.getStats().viewers).toBe(1);
  expect(fake.set).toEqual(T1080);
  expect(fake.setBusyAnswers).toBeGreaterThan(0);
  expect(units).toBeGreaterThanOrEqual(2);
  expect(sizes[0]).toBe('1280x720');
  expect(sizes.at(-1)).toBe('1920x1080');
}, 60_000);
