/**
 * A fake `v4l2-ctl` on a fake HDMI receiver for the driver tests: a CommandRunner and a SpawnWait
 * that answer as vivid did in the device VM (recorded.test-support.ts), from a state the test
 * sets (signal mode, detected timings, a reader holding the device, unplugged).
 */
import { CommandError, type CommandRunner } from '../../process/run';
import type { SpawnWait } from './ctl';
import { edidHexDump, parseEdidHexDump } from './parse';
import * as rec from './recorded.test-support';

export type FakeMode = 'signal' | 'no_signal' | 'no_lock' | 'out_of_range';

export interface FakeTimings {
  width: number;
  height: number;
  totalWidth: number;
  totalHeight: number;
  pixelclock: number;
}

export const T720: FakeTimings = {
  width: 1280,
  height: 720,
  totalWidth: 1650,
  totalHeight: 750,
  pixelclock: 74_250_000,
};
export const T1080: FakeTimings = {
  width: 1920,
  height: 1080,
  totalWidth: 2200,
  totalHeight: 1125,
  pixelclock: 148_500_000,
};

function timingsText(t: FakeTimings): string {
  const fps = t.pixelclock / (t.totalWidth * t.totalHeight);
  return rec.QUERY_720P.replace('Active width: 1280', `Active width: ${t.width}`)
    .replace('Active height: 720', `Active height: ${t.height}`)
    .replace('Total width: 1650', `Total width: ${t.totalWidth}`)
    .replace('Total height: 750', `Total height: ${t.totalHeight}`)
    .replace('74250000 Hz (60.00', `${t.pixelclock} Hz (${fps.toFixed(2)}`);
}

export class FakeReceiver {
  mode: FakeMode = 'signal';
  /** What the receiver detects. */
  detected: FakeTimings = T720;
  /** What was set (S_DV_TIMINGS); the capture format is its size. */
  set: FakeTimings = T720;
  present = true;
  /** A USB dongle: no DV timings, no EDID, no events. */
  dongle = false;
  /** Somebody streams: S_DV_TIMINGS answers EBUSY (with different timings). */
  busy: () => boolean = () => false;
  /** Somebody streams and the receiver refuses an EDID then (vivid): S_EDID answers EBUSY. */
  edidBusy: () => boolean = () => false;
  edidBusyAnswers = 0;
  /** Garbage: the query succeeds with zeroes. */
  garbage = false;
  edid: Buffer | null = parseEdidHexDump(rec.VIVID_EDID_HEX);
  /** Rewrites the CEC physical address as vivid does (byte 151 of a 1.0.0.0 VSDB). */
  cecRewrite = false;
  readonly calls: string[][] = [];
  setBusyAnswers = 0;
  private waiters: Array<(r: Awaited<ReturnType<SpawnWait>>) => void> = [];

  run: CommandRunner = async (_file, args, opts) => {
    this.calls.push([...args]);
    const fail = (stderr: string, code = 255): never => {
      throw new CommandError('v4l2-ctl', args, { code, stderr });
    };
    if (!this.present) fail(rec.NO_DEVICE.replace('/dev/video7', args[1] ?? ''), 1);
    const verb = args[2] ?? '';
    switch (verb) {
      case '--query-dv-timings':
        if (this.dongle) fail(rec.QUERY_DONGLE);
        if (this.garbage) return { stdout: rec.QUERY_ZEROES, stderr: '' };
        if (this.mode === 'no_signal') fail(rec.QUERY_NO_SIGNAL);
        if (this.mode === 'no_lock') fail(rec.QUERY_NO_LOCK);
        if (this.mode === 'out_of_range') fail(rec.QUERY_OUT_OF_RANGE);
        return { stdout: timingsText(this.detected), stderr: '' };
      case '--set-dv-bt-timings': {
        if (this.mode !== 'signal') fail(rec.QUERY_NO_SIGNAL);
        const same = JSON.stringify(this.detected) === JSON.stringify(this.set);
        if (!same && this.busy()) {
          this.setBusyAnswers += 1;
          fail(rec.SET_BUSY);
        }
        this.set = this.detected;
        return { stdout: 'BT timings set\n', stderr: '' };
      }
      case '--get-fmt-video':
        if (this.dongle) return { stdout: rec.FMT_1080P.replace("'YUYV'", "'MJPG'"), stderr: '' };
        return {
          stdout: rec.FMT_720P.replace('1280/720', `${this.set.width}/${this.set.height}`),
          stderr: '',
        };
      case '--list-formats-ext':
        return {
          stdout: this.dongle ? rec.LIST_FORMATS_DONGLE : rec.LIST_FORMATS_VIVID,
          stderr: '',
        };
      case '--get-edid=pad=0,format=hex':
        if (this.dongle) fail('VIDIOC_G_EDID: failed: Inappropriate ioctl for device\n');
        if (!this.edid) fail(rec.GET_EDID_NONE);
        return { stdout: edidHexDump(this.edid!), stderr: '' };
      case '--set-edid=pad=0,file=-,format=hex': {
        if (this.dongle) fail('VIDIOC_S_EDID: failed: Inappropriate ioctl for device\n');
        if (this.edidBusy()) {
          this.edidBusyAnswers += 1;
          // the failure on stderr (V4l2Ctl takes it alike with any exit status)
          return { stdout: '', stderr: rec.SET_EDID_BUSY };
        }
        const bytes = parseEdidHexDump(String(opts?.input ?? ''));
        if (!bytes) return { stdout: '', stderr: rec.SET_EDID_BAD };
        if (this.cecRewrite && bytes.length === 256) {
          bytes[151] = 0;
          let sum = 0;
          for (let i = 128; i < 255; i++) sum += bytes[i]!;
          bytes[255] = (256 - (sum % 256)) % 256;
        }
        this.edid = bytes;
        return { stdout: '', stderr: '' };
      }
      default:
        return fail(`unexpected ${args.join(' ')}`, 1);
    }
  };

  spawnWait: SpawnWait = (_binary, _args, signal) =>
    new Promise((resolve) => {
      if (this.dongle) {
        resolve({
          code: 255,
          stdout: '',
          stderr: 'VIDIOC_SUBSCRIBE_EVENT: failed: Invalid argument\n',
          aborted: false,
        });
        return;
      }
      const done = (r: Awaited<ReturnType<SpawnWait>>): void => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve(r);
      };
      signal.addEventListener(
        'abort',
        () => done({ code: null, stdout: '', stderr: '', aborted: true }),
        {
          once: true,
        },
      );
      this.waiters.push(done);
    });

  /** Waits now blocked on an event. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** The source changed: every waiting v4l2-ctl prints its event and exits. */
  sourceChange(): void {
    for (const w of [...this.waiters])
      w({ code: 0, stdout: rec.EVENT_LINE, stderr: '', aborted: false });
  }

  /** The node vanished: waits fail as v4l2-ctl's select does on a gone device. */
  unplug(): void {
    this.present = false;
    for (const w of [...this.waiters]) {
      w({
        code: 255,
        stdout: '',
        stderr: 'VIDIOC_DQEVENT: failed: No such device\n',
        aborted: false,
      });
    }
  }
}
