/**
 * `video.type: file`: a video file (`video.file`) played in a loop as the remote computer's
 * screen, for demonstrations and tests without a machine. It is an `ffmpeg-input` source
 * (types.ts): the encoder's ffmpeg reads the file itself at its own rate (`-re -stream_loop -1`),
 * no frame passes through this process.
 *
 * State: probed once by `init()` with ffprobe (`-show_entries stream=width,height,...`, 10 s at
 * most): online with a signal at the file's size when it has a video stream; otherwise offline,
 * `reason` says why (not found, unreadable, not a video) and the log has it. Nothing throws:
 * the server starts without a picture, as with no VM.
 *
 * The path goes to ffmpeg as `file:<absolute path>`, so a name such as `http://...` or
 * `concat:...` is a file name, never another protocol.
 */
import { execFile } from 'node:child_process';
import { basename, dirname, join, resolve } from 'node:path';
import type { Logger } from '../../log';
import type { VideoInput, VideoSource, VideoSourceState } from './types';

export interface FileVideoOptions {
  /** The video file (config `video.file`); null: none set, the source stays offline. */
  path: string | null;
  /** The ffmpeg executable (config `video.ffmpeg`); ffprobe is looked up beside it. */
  ffmpeg?: string;
  /** The ffprobe executable; default: `ffprobe` in ffmpeg's folder (or on PATH). */
  ffprobe?: string;
  log?: Logger;
  probeTimeoutMs?: number;
}

/** What ffprobe found: the first video stream's size and rate. */
export interface FileProbe {
  width: number;
  height: number;
  fps: number;
}

const OFFLINE: VideoSourceState = { online: false, signal: false, width: 0, height: 0 };
const PROBE_TIMEOUT_MS = 10_000;
/** ffprobe's JSON for one stream is a few hundred bytes; anything larger is not it. */
const PROBE_MAX_OUTPUT = 64 * 1024;
/** A file without a usable rate is played at this one. */
const DEFAULT_FPS = 30;

/** ffprobe beside `ffmpeg`: `ffmpeg` -> `ffprobe`, `/opt/x/bin/ffmpeg` -> `/opt/x/bin/ffprobe`. */
export function ffprobeBeside(ffmpeg: string): string {
  const name = basename(ffmpeg).replace(/ffmpeg(?!.*ffmpeg)/, 'ffprobe');
  if (name === basename(ffmpeg)) return 'ffprobe';
  return ffmpeg.includes('/') ? join(dirname(ffmpeg), name) : name;
}

/** `25/1` -> 25, `30000/1001` -> 29.97; null when it is not a positive rate. */
function parseRate(rate: unknown): number | null {
  if (typeof rate !== 'string') return null;
  const [num, den = '1'] = rate.split('/');
  const value = Number(num) / Number(den);
  return Number.isFinite(value) && value > 0 ? Math.round(value * 100) / 100 : null;
}

/** ffprobe's JSON answer to a FileProbe, or the reason it is none (pure, unit-tested). */
export function parseProbe(json: string): FileProbe | string {
  let streams: unknown;
  try {
    streams = (JSON.parse(json) as { streams?: unknown }).streams;
  } catch {
    return 'ffprobe answered something that is not JSON';
  }
  const stream = Array.isArray(streams) ? (streams[0] as Record<string, unknown>) : undefined;
  if (!stream) return 'the file has no video stream';
  const size = (v: unknown): number => (typeof v === 'number' && Number.isInteger(v) ? v : 0);
  const width = size(stream['width']);
  const height = size(stream['height']);
  if (width <= 0 || height <= 0) return 'the video stream has no picture size';
  const fps =
    parseRate(stream['avg_frame_rate']) ?? parseRate(stream['r_frame_rate']) ?? DEFAULT_FPS;
  return { width, height, fps };
}

export class FileVideo implements VideoSource {
  readonly name = 'file';
  private state: VideoSourceState = OFFLINE;
  private probed: FileProbe | null = null;
  private problem: string | null = 'not probed yet';
  private readonly listeners = new Set<(state: VideoSourceState) => void>();
  private readonly url: string | null;
  private readonly ffprobe: string;
  private abort: AbortController | null = null;

  constructor(private readonly opts: FileVideoOptions) {
    this.url = opts.path === null ? null : `file:${resolve(opts.path)}`;
    this.ffprobe = opts.ffprobe ?? ffprobeBeside(opts.ffmpeg ?? 'ffmpeg');
  }

  getState(): VideoSourceState {
    return { ...this.state };
  }

  /** Why the source is offline (null while online). */
  get reason(): string | null {
    return this.problem;
  }

  onState(listener: (state: VideoSourceState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  input(): VideoInput {
    const p = this.probed;
    return {
      kind: 'ffmpeg-input',
      // at the file's own rate, from its start again at its end
      args: ['-re', '-stream_loop', '-1', '-i', this.url ?? ''],
      width: p?.width ?? 0,
      height: p?.height ?? 0,
      fps: p?.fps ?? DEFAULT_FPS,
    };
  }

  /** The encoder reads the file itself: no frames to push. */
  async startCapture(): Promise<void> {}
  async stopCapture(): Promise<void> {}

  async init(): Promise<void> {
    const result = await this.probe();
    if (typeof result === 'string') {
      this.probed = null;
      this.problem = result;
      this.opts.log?.warn({ path: this.opts.path, reason: result }, 'video file cannot be played');
      this.setState(OFFLINE);
      return;
    }
    this.probed = result;
    this.problem = null;
    this.opts.log?.info({ path: this.opts.path, ...result }, 'video file probed');
    this.setState({ online: true, signal: true, width: result.width, height: result.height });
  }

  async dispose(): Promise<void> {
    this.abort?.abort();
    this.abort = null;
  }

  private probe(): Promise<FileProbe | string> {
    const url = this.url;
    const path = this.opts.path ?? '';
    if (url === null) return Promise.resolve('no video file is set (video.file)');
    const args = [
      ...['-v', 'error', '-select_streams', 'v:0'],
      ...['-show_entries', 'stream=width,height,avg_frame_rate,r_frame_rate', '-of', 'json'],
      url,
    ];
    this.abort = new AbortController();
    return new Promise((done) => {
      execFile(
        this.ffprobe,
        args,
        {
          timeout: this.opts.probeTimeoutMs ?? PROBE_TIMEOUT_MS,
          maxBuffer: PROBE_MAX_OUTPUT,
          killSignal: 'SIGKILL',
          signal: this.abort!.signal,
        },
        (err, stdout, stderr) => {
          if (!err) {
            done(parseProbe(stdout));
            return;
          }
          const said = String(stderr).trim().split('\n').at(-1);
          const code = (err as NodeJS.ErrnoException).code;
          if (err.killed)
            done(`ffprobe gave no answer in ${this.opts.probeTimeoutMs ?? PROBE_TIMEOUT_MS} ms`);
          else if (code === 'ENOENT' && !said) done(`${this.ffprobe} not found`);
          else if (said) done(said.replace(url, path));
          else done(`ffprobe failed: ${err.message}`);
        },
      );
    });
  }

  private setState(next: VideoSourceState): void {
    const changed = JSON.stringify(next) !== JSON.stringify(this.state);
    this.state = next;
    if (!changed) return;
    for (const l of [...this.listeners]) l(this.getState());
  }
}
