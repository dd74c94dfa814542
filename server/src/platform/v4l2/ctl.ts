/**
 * A typed wrapper around Debian's `v4l2-ctl` (v4l-utils) for one capture device: DV timings
 * (query, set from the query), the capture format and the formats offered, EDID get/set, and
 * source-change events. Every call goes through the one command runner (process/run.ts), so
 * tests inject a fake that serves recorded outputs (ctl.test.ts); the event wait is a child of
 * its own (`spawnWait`), injectable the same way.
 *
 * Why v4l2-ctl and not ioctls from node: node has no ioctl, and a native addon for four ioctls
 * is more to build for every board than a program Debian ships (`v4l-utils`).
 *
 * Source-change events: `--poll-for-event` would be one long-lived child, but it writes through
 * stdio's block buffer when its stdout is a pipe, so its lines arrive only when it exits
 * (measured in the device VM). `--wait-for-event=source_change=<input>` blocks in the kernel until
 * one event and then exits with it printed: one child per event, no timer (the driver starts
 * the next one before it reads the new state, drivers/video/v4l2.ts).
 */
import { spawn } from 'node:child_process';
import { sameEdidButPhysicalAddress } from '@kvm/protocol';
import { CommandError, runCommand, type CommandRunner } from '../../process/run';
import {
  edidHexDump,
  failureLine,
  faultOf,
  parseDvTimings,
  parseEdidHexDump,
  parseFormat,
  parseFormats,
  type CaptureFormat,
  type DvTimings,
  type FormatChoice,
  type V4l2Fault,
} from './parse';

/** A v4l2-ctl call that failed: what it means (`fault`) and the line it said. */
export class V4l2Error extends Error {
  constructor(
    readonly fault: V4l2Fault,
    message: string,
  ) {
    super(message);
    this.name = 'V4l2Error';
  }
}

/** How one wait for a source change ended. */
export type WaitResult =
  /** an event came */
  | 'event'
  /** the device takes no source-change subscription (a USB dongle): do not wait again */
  | 'unsupported'
  /** the device went away, or the wait failed otherwise: `error` says why */
  | 'failed'
  /** `abort` was signalled */
  | 'aborted';

/** Starts one wait (tests replace it); resolves with how it ended and what it printed. */
export type SpawnWait = (
  binary: string,
  args: readonly string[],
  signal: AbortSignal,
) => Promise<{ code: number | null; stdout: string; stderr: string; aborted: boolean }>;

export const spawnWait: SpawnWait = (binary, args, signal) =>
  new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let aborted = false;
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const onAbort = (): void => {
      aborted = true;
      child.kill('SIGKILL');
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    // bounded: an event is one line, a failure a few
    child.stdout.on('data', (c: Buffer) => (stdout = (stdout + c.toString('utf8')).slice(-4096)));
    child.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-4096)));
    const done = (code: number | null): void => {
      signal.removeEventListener('abort', onAbort);
      resolve({ code, stdout, stderr, aborted });
    };
    child.on('error', (err) => {
      stderr += err.message;
      done(null);
    });
    child.on('close', (code) => done(code));
  });

export interface V4l2CtlOptions {
  /** The capture device, e.g. `/dev/video0` (config `video.v4l2.device`). */
  device: string;
  /** The input whose source changes are watched (config `video.v4l2.input`). */
  input?: number;
  /** The v4l2-ctl executable (config `video.v4l2.ctl`). */
  binary?: string;
  run?: CommandRunner;
  spawnWait?: SpawnWait;
  /** One call's time-out; a wedged driver must not hold the probe forever. */
  timeoutMs?: number;
}

const TIMEOUT_MS = 5_000;

export class V4l2Ctl {
  readonly device: string;
  readonly input: number;
  private readonly binary: string;
  private readonly run: CommandRunner;
  private readonly wait: SpawnWait;
  private readonly timeoutMs: number;

  constructor(opts: V4l2CtlOptions) {
    this.device = opts.device;
    this.input = opts.input ?? 0;
    this.binary = opts.binary ?? 'v4l2-ctl';
    this.run = opts.run ?? runCommand;
    this.wait = opts.spawnWait ?? spawnWait;
    this.timeoutMs = opts.timeoutMs ?? TIMEOUT_MS;
  }

  /** Runs `v4l2-ctl -d <device> ...args`; a failure becomes a V4l2Error with its fault. */
  private async call(args: string[], input?: string): Promise<string> {
    try {
      const { stdout, stderr } = await this.run(this.binary, ['-d', this.device, ...args], {
        timeoutMs: this.timeoutMs,
        ...(input !== undefined ? { input } : {}),
      });
      // a few calls fail with exit 0 and say so on stderr (a refused EDID)
      if (/: failed: /.test(stderr)) {
        throw new V4l2Error(faultOf(stderr), failureLine(stderr));
      }
      return stdout;
    } catch (err) {
      if (err instanceof V4l2Error) throw err;
      if (err instanceof CommandError) {
        const said = `${err.stderr}\n${err.stdout}`;
        if (err.timedOut)
          throw new V4l2Error('error', `v4l2-ctl gave no answer in ${this.timeoutMs} ms`);
        if (err.code === 'ENOENT' && !said.trim()) {
          throw new V4l2Error('error', `${this.binary} not found (Debian package v4l-utils)`);
        }
        throw new V4l2Error(faultOf(said), failureLine(said) || err.message);
      }
      throw new V4l2Error('error', (err as Error).message);
    }
  }

  /** The timings the receiver detects now; a V4l2Error says no signal, no lock, out of range... */
  async queryDvTimings(): Promise<DvTimings> {
    const out = await this.call(['--query-dv-timings']);
    const t = parseDvTimings(out);
    if (!t) throw new V4l2Error('invalid', 'the receiver reports timings without a picture size');
    return t;
  }

  /** The timings the device captures with now (what the last set made). */
  async getDvTimings(): Promise<DvTimings | null> {
    return parseDvTimings(await this.call(['--get-dv-timings']));
  }

  /** VIDIOC_S_DV_TIMINGS with what the query detects (`busy` while somebody streams). */
  async setDvTimingsFromQuery(): Promise<void> {
    await this.call(['--set-dv-bt-timings', 'query']);
  }

  async getFormat(): Promise<CaptureFormat> {
    const f = parseFormat(await this.call(['--get-fmt-video']));
    if (!f) throw new V4l2Error('error', 'v4l2-ctl printed no capture format');
    return f;
  }

  /** The formats with their sizes and frame rates. */
  async listFormats(): Promise<FormatChoice[]> {
    return parseFormats(await this.call(['--list-formats-ext']));
  }

  /** The EDID the receiver offers, or null when it offers none (ENODATA). */
  async getEdid(): Promise<Buffer | null> {
    try {
      return parseEdidHexDump(await this.call(['--get-edid=pad=0,format=hex']));
    } catch (err) {
      if (err instanceof V4l2Error && err.fault === 'unsupported') return null;
      throw err;
    }
  }

  /**
   * Writes the EDID (VIDIOC_S_EDID, through stdin as hex) and reads it back: a V4l2Error when
   * the device holds other bytes after (v4l2-ctl refuses some EDIDs with exit 0), the CEC
   * physical address aside.
   */
  async setEdid(bytes: Uint8Array): Promise<void> {
    await this.call(['--set-edid=pad=0,file=-,format=hex'], edidHexDump(bytes));
    const held = await this.getEdid();
    // a receiver with CEC puts its own physical address in (edid.ts)
    if (!held || !sameEdidButPhysicalAddress(held, bytes)) {
      throw new V4l2Error(
        'error',
        `the capture device holds ${held ? `another EDID (${held.length} bytes)` : 'no EDID'} after the write`,
      );
    }
  }

  /** Blocks until the input's next source change (or abort); see the file's comment. */
  async waitForSourceChange(signal: AbortSignal): Promise<{ result: WaitResult; error?: string }> {
    const args = ['-d', this.device, `--wait-for-event=source_change=${this.input}`];
    const r = await this.wait(this.binary, args, signal);
    if (r.aborted) return { result: 'aborted' };
    if (r.code === 0 && /source_change/.test(r.stdout)) return { result: 'event' };
    const said = `${r.stderr}\n${r.stdout}`;
    const fault = faultOf(said);
    if (fault === 'unsupported') return { result: 'unsupported', error: failureLine(said) };
    return { result: 'failed', error: failureLine(said) || `v4l2-ctl exited with ${r.code}` };
  }
}
