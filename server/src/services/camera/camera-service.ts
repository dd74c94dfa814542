/**
 * The browser's camera as the remote computer's USB webcam (issue 24, docs/hardware.md "Camera"):
 * the gadget's UVC function (platform/gadget/uvc.ts) and our frame server for it,
 * `uvc-stream` (server/native/uvc-stream), which answers the remote computer's UVC requests on
 * the gadget's video node and hands it the frames this service writes to its stdin.
 *
 * - The frame server runs while the webcam is online (the function made and the gadget bound),
 *   under a Supervisor: a crash is restarted with a back-off (0.5 s doubling to 10 s) and the
 *   state says `restarting` meanwhile. It is stopped before a rebuild unbinds the gadget (the
 *   kernel waits for the node to be closed) and started again on the new node after it.
 * - What the remote computer does is read from the server's status lines: `idle` (not
 *   streaming), `streaming` (taking frames), `stalled` (streaming on, nothing taken for 2 s).
 * - Bounded: a frame is written only when the program's stdin holds less than one frame; others
 *   are dropped and counted. The program itself keeps only the newest frame.
 * - On the other targets there is no gadget: the audio driver's reason stands (state() = null).
 */
import { EventEmitter } from 'node:events';
import { isAbsolute, join } from 'node:path';
import type { AudioState, CameraRemoteState } from '@kvm/protocol';
import type { Logger } from '../../log';
import { REPO_ROOT } from '../../paths';
import { Supervisor, type BackoffOptions } from '../../process/supervisor';

/** The webcam's picture (platform/gadget/uvc.ts UvcSpec): YUYV 4:2:2 at one size. */
export interface CameraSpec {
  width: number;
  height: number;
  /** Frame rates offered, the first the default. */
  fps: number[];
}

/** What the service needs of the gadget platform. */
export interface CameraGadget {
  cameraOnline(): boolean;
  cameraProblem(): string | null;
  cameraNode(): Promise<{ node: string; streamingInterface: number | null } | null>;
  onChange(listener: () => void): () => void;
  onRebuilt(listener: () => void): () => void;
  onRebuilding?(listener: () => Promise<void>): () => void;
  /**
   * Makes the gadget again without the webcam: its frame server cannot run, and the kernel
   * keeps the whole gadget disconnected while nobody holds the webcam's node open.
   */
  dropCamera?(reason: string): Promise<void>;
}

export interface CameraServiceOptions {
  gadget: CameraGadget;
  /** The uvc-stream executable (relative: to the checkout). */
  program: string;
  spec: CameraSpec;
  log: Logger;
  backoff?: BackoffOptions;
  /** The frame server says `stalled` after this long without a frame taken. */
  stallMs?: number;
}

export interface CameraStats {
  /** Frames written to the frame server. */
  written: number;
  /** Frames dropped: its stdin still held one, no server ran, or the size was wrong. */
  dropped: number;
  /** Frames the remote computer took (the server's last `stats` line). */
  sent: number;
  /** Restarts of the frame server after it ended unexpectedly. */
  restarts: number;
}

type CameraState = AudioState['camera'];

const HEADER_BYTES = 4;
/** A frame server that ends this soon after its start, this often in a minute, is given up. */
const QUICK_EXIT_MS = 10_000;
const QUICK_EXIT_WINDOW_MS = 60_000;
const QUICK_EXITS_TO_DROP = 5;

export class CameraService extends EventEmitter<{ state: [] }> {
  private supervisor: Supervisor | null = null;
  private args: string[] | null = null;
  private remote: CameraRemoteState = 'idle';
  private readonly senders = new Set<string>();
  private readonly frameBytes: number;
  private readonly program: string;
  private readonly disposers: Array<() => void> = [];
  private queue: Promise<void> = Promise.resolve();
  private disposed = false;
  readonly stats: CameraStats = { written: 0, dropped: 0, sent: 0, restarts: 0 };
  /** When the frame server ended unexpectedly, shortly after it started (performance.now()). */
  private quickExits: number[] = [];

  constructor(private readonly opts: CameraServiceOptions) {
    super();
    this.frameBytes = opts.spec.width * opts.spec.height * 2;
    this.program = isAbsolute(opts.program) ? opts.program : join(REPO_ROOT, opts.program);
  }

  /** Follows the gadget: the frame server runs while its webcam is online. */
  init(): void {
    const g = this.opts.gadget;
    this.disposers.push(g.onChange(() => this.reconcile()));
    this.disposers.push(g.onRebuilt(() => this.reconcile()));
    if (g.onRebuilding) {
      this.disposers.push(
        g.onRebuilding(async () => {
          // the kernel's unbind waits for the video node to be closed
          await this.serialized(() => this.stopServer());
        }),
      );
    }
    this.reconcile();
  }

  /** The camera part of AudioState. */
  state(): CameraState {
    const problem = this.opts.gadget.cameraProblem();
    if (problem !== null) {
      return {
        available: false,
        reason: problem,
        code: 'uvc_unavailable',
        active: false,
        remote: null,
      };
    }
    return {
      available: true,
      reason: null,
      code: null,
      active: this.senders.size > 0,
      remote: this.remote,
    };
  }

  /** Bytes of one frame (YUYV at the webcam's size): what pushFrame takes. */
  get frameSize(): number {
    return this.frameBytes;
  }

  get size(): { width: number; height: number } {
    return { width: this.opts.spec.width, height: this.opts.spec.height };
  }

  /** A browser starts (true) or stops (false) sending its camera. */
  setActive(sender: string, active: boolean): void {
    const before = this.senders.size > 0;
    if (active) this.senders.add(sender);
    else this.senders.delete(sender);
    if (before !== this.senders.size > 0) this.emit('state');
  }

  /** One YUYV frame for the remote computer; dropped (and counted) if it cannot go now. */
  pushFrame(frame: Buffer): boolean {
    const stdin = this.supervisor?.state === 'running' ? this.supervisor.stdin : null;
    if (!stdin || stdin.destroyed || frame.length !== this.frameBytes) {
      this.stats.dropped += 1;
      return false;
    }
    if (stdin.writableLength >= this.frameBytes) {
      this.stats.dropped += 1;
      return false;
    }
    const header = Buffer.alloc(HEADER_BYTES);
    header.writeUInt32LE(frame.length, 0);
    stdin.write(header);
    stdin.write(frame);
    this.stats.written += 1;
    return true;
  }

  /** The frame server's state for the log bundle and tests. */
  serverState(): string {
    return this.supervisor?.state ?? 'stopped';
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    for (const d of this.disposers.splice(0)) d();
    await this.serialized(() => this.stopServer());
    this.removeAllListeners();
  }

  // ---- internals ----

  private reconcile(): void {
    void this.serialized(async () => {
      if (this.disposed) return;
      const node = this.opts.gadget.cameraOnline() ? await this.opts.gadget.cameraNode() : null;
      if (!node) {
        await this.stopServer();
        this.emit('state');
        return;
      }
      const args = [
        '--device',
        node.node,
        '--width',
        String(this.opts.spec.width),
        '--height',
        String(this.opts.spec.height),
        '--fps',
        String(this.opts.spec.fps[0] ?? 30),
        '--stall-ms',
        String(this.opts.stallMs ?? 2000),
        ...(node.streamingInterface !== null
          ? ['--streaming-intf', String(node.streamingInterface)]
          : []),
      ];
      if (this.supervisor && this.args?.join(' ') === args.join(' ')) return;
      await this.stopServer();
      this.startServer(args);
      this.emit('state');
    });
  }

  private startServer(args: string[]): void {
    const sup = new Supervisor({
      name: 'uvc-stream',
      command: this.program,
      args,
      stdin: 'pipe',
      stdout: 'lines',
      retryFirstSpawn: true,
      backoff: { initialMs: 500, maxMs: 10_000, ...this.opts.backoff },
    });
    this.supervisor = sup;
    this.args = args;
    sup.on('output', (line, stream) => {
      if (stream === 'stdout') this.onLine(line);
      else this.opts.log.debug({ line }, 'uvc-stream');
    });
    sup.on('started', (pid) => {
      this.opts.log.info({ pid, args }, 'camera: the webcam frame server started');
    });
    sup.on('exited', (info) => {
      if (info.expected) return;
      this.stats.restarts += 1;
      const now = performance.now();
      if (info.uptimeMs < QUICK_EXIT_MS) this.quickExits.push(now);
      this.quickExits = this.quickExits.filter((t) => now - t < QUICK_EXIT_WINDOW_MS);
      if (this.quickExits.length >= QUICK_EXITS_TO_DROP) {
        const last = sup.recentOutput().at(-1) ?? `exit ${info.code ?? info.signal}`;
        this.drop(
          `its frame server keeps ending (${this.quickExits.length} times in a minute; ${last})`,
        );
        return;
      }
      this.opts.log.warn(
        { code: info.code, signal: info.signal, last: sup.recentOutput().slice(-3) },
        'camera: the webcam frame server ended; restarting',
      );
      this.setRemote('restarting');
    });
    sup.on('spawnError', (err) => {
      this.opts.log.warn({ err: err.message }, 'camera: the webcam frame server did not start');
      this.drop(`its frame server ${this.program} cannot start (${err.message})`);
    });
    // stdin errors (EPIPE when it died) are the exit's business
    sup.on('started', () => sup.stdin?.on('error', () => undefined));
    this.remote = 'idle';
    void sup.ensureStarted().catch((err: Error) => {
      this.opts.log.warn({ err: err.message }, 'camera: the webcam frame server did not start');
    });
  }

  /** Gives the webcam up for this run: the gadget is made again without it. */
  private drop(reason: string): void {
    this.opts.log.warn({ reason }, 'camera: giving the webcam up');
    void this.serialized(() => this.stopServer()).then(() =>
      this.opts.gadget.dropCamera?.(reason).catch((err: Error) => {
        this.opts.log.warn({ err: err.message }, 'camera: the gadget was not made again');
      }),
    );
    this.emit('state');
  }

  private async stopServer(): Promise<void> {
    const sup = this.supervisor;
    if (!sup) return;
    this.supervisor = null;
    this.args = null;
    await sup.ensureStopped();
    sup.removeAllListeners();
    this.remote = 'idle';
  }

  private onLine(line: string): void {
    const [word, ...rest] = line.trim().split(/\s+/);
    switch (word) {
      case 'ready':
      case 'streamoff':
      case 'disconnect':
        this.setRemote('idle');
        break;
      case 'streamon':
      case 'reading':
        this.setRemote('streaming');
        break;
      case 'stalled':
        this.setRemote('stalled');
        break;
      case 'stats': {
        const sent = /sent=(\d+)/.exec(rest.join(' '))?.[1];
        if (sent) this.stats.sent = Number(sent);
        break;
      }
      case 'error':
        this.opts.log.warn({ line }, 'camera: the webcam frame server failed');
        break;
      default:
        break;
    }
  }

  private setRemote(remote: CameraRemoteState): void {
    if (remote === this.remote) return;
    this.remote = remote;
    this.opts.log.info({ remote }, 'camera: the remote computer and the webcam');
    this.emit('state');
  }

  private serialized(fn: () => Promise<void>): Promise<void> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch((err: Error) => {
      this.opts.log.warn({ err: err.message }, 'camera: reconcile failed');
    });
    return run;
  }
}
