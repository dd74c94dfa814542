/**
 * The QEMU VM's sound server (docs/drivers.md, "Audio (QEMU)"): a PulseAudio server of our own per
 * data folder, and the VM's intel-hda + hda-duplex playing into it and recording from it.
 *
 * - `kvm_speaker`, a null sink: the VM plays into it; ffmpeg captures its `.monitor` (capture()).
 * - `kvm_mic`, a null sink: ffmpeg plays the browser's microphone into it (playback()); the VM
 *   records its `.monitor`.
 *
 * Only the native protocol on `<run>/pa.sock` (anonymous: the run folder is the server's own,
 * 0700), no default script (`-n`: no sound device of the host, no other module), module loading
 * off, the user's own PulseAudio and session bus never asked for. HOME and the runtime folders
 * point at `<run>/pulse/`. Under a Supervisor with a pid file (a stale one is killed at start,
 * every exit path kills it); if it dies it is started again, but the running QEMU does not
 * reconnect: the VM's sound stays off until QEMU itself restarts (not an ATX reset).
 */
import { createConnection } from 'node:net';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { findExecutable, Supervisor, type BackoffOptions } from '../../process/supervisor';
import type { Logger } from '../../log';
import { qemuHelp } from './help';

export const SPEAKER_SINK = 'kvm_speaker';
export const MIC_SINK = 'kvm_mic';

/** ffmpeg's pulse input fragment: 10 ms of s16le stereo at 48 kHz (the default is far larger). */
const FRAGMENT_BYTES = 1920;

/** What QEMU's `pa` audio backend needs to reach our server (machine.ts builds `-audiodev`). */
export interface QemuAudioBackend {
  /** The native protocol socket. */
  socket: string;
  /** The sink the VM plays into. */
  speakerSink: string;
  /** The source the VM records from. */
  micSource: string;
}

export interface PulsePaths {
  socket: string;
  pidfile: string;
  /** HOME, XDG_RUNTIME_DIR, PULSE_RUNTIME_PATH, PULSE_STATE_PATH of the server. */
  home: string;
}

export function pulsePaths(runDir: string): PulsePaths {
  return {
    socket: join(runDir, 'pa.sock'),
    pidfile: join(runDir, 'pulseaudio.pid'),
    home: join(runDir, 'pulse'),
  };
}

/** PulseAudio's command line (pure; docs/drivers.md explains it). */
export function pulseArgs(paths: PulsePaths): string[] {
  const sink = (name: string, description: string) =>
    `module-null-sink sink_name=${name} rate=48000 channels=2 format=s16le ` +
    `sink_properties=device.description=${description}`;
  return [
    ...['-n', '--daemonize=no', '--exit-idle-time=-1', '--use-pid-file=no', '--system=no'],
    ...['--realtime=no', '--high-priority=no', '--log-target=stderr', '--log-level=warning'],
    // the sinks before the socket: once the socket answers, both exist
    ...['-L', sink(SPEAKER_SINK, 'VM-speaker'), '-L', sink(MIC_SINK, 'VM-microphone')],
    ...['-L', `module-native-protocol-unix socket=${paths.socket} auth-anonymous=1`],
    // after the command line's own modules: a client cannot load any (e.g. a TCP listener)
    '--disallow-module-loading',
    '--disallow-exit',
  ];
}

/** Its environment: nothing of the user's session (no PULSE_SERVER, no session bus, no X). */
export function pulseEnv(paths: PulsePaths): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    LANG: 'C',
    HOME: paths.home,
    XDG_RUNTIME_DIR: paths.home,
    XDG_CONFIG_HOME: join(paths.home, 'config'),
    XDG_STATE_HOME: join(paths.home, 'state'),
    PULSE_RUNTIME_PATH: join(paths.home, 'runtime'),
    PULSE_STATE_PATH: join(paths.home, 'state'),
  };
}

/** ffmpeg input arguments: the VM's speaker, 10 ms fragments (pure). */
export function pulseCaptureArgs(socket: string): string[] {
  return [
    ...['-f', 'pulse', '-server', `unix:${socket}`, '-name', 'kvm', '-stream_name', 'speaker'],
    ...['-sample_rate', '48000', '-channels', '2', '-fragment_size', String(FRAGMENT_BYTES)],
    ...['-i', `${SPEAKER_SINK}.monitor`],
  ];
}

/** ffmpeg output arguments: into the VM's microphone sink, 20 ms of buffer (pure). */
export function pulsePlaybackArgs(socket: string): string[] {
  return [
    ...['-ac', '2', '-ar', '48000', '-f', 'pulse', '-server', `unix:${socket}`, '-name', 'kvm'],
    ...['-device', MIC_SINK, '-buffer_duration', '20', 'microphone'],
  ];
}

/** Whether this QEMU has its `pa` audio backend (Debian: the qemu-system-gui package). */
export async function hasPulseBackend(qemuBinary: string): Promise<boolean> {
  return /^pa$/m.test((await qemuHelp(qemuBinary, '-audiodev')) ?? '');
}

/** Resolves once something accepts connections on the unix socket `path`. */
async function waitForSocket(path: string, timeoutMs: number, alive: () => boolean): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection(path);
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (!alive()) throw new Error('pulseaudio exited before its socket answered');
    if (performance.now() > deadline) throw new Error(`no pulseaudio socket in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface QemuPulseOptions {
  /** `<data_dir>/run`, shared with the machine. */
  runDir: string;
  log?: Logger;
  pulseBinary?: string;
  /** To check that QEMU has its `pa` backend. */
  qemuBinary?: string;
  backoff?: BackoffOptions;
  startTimeoutMs?: number;
}

/** The VM's PulseAudio server; the audio driver (drivers/audio/qemu.ts) reads and writes it. */
export class QemuPulse {
  readonly paths: PulsePaths;
  private readonly opts: QemuPulseOptions;
  private supervisor: Supervisor | null = null;
  /** Why there is no sound on this machine (no pulseaudio, no `pa` in QEMU), once known. */
  private _unavailable: string | null = null;

  constructor(opts: QemuPulseOptions) {
    this.opts = opts;
    this.paths = pulsePaths(opts.runDir);
  }

  /** Why this machine has no sound, or null. */
  get unavailable(): string | null {
    return this._unavailable;
  }

  /** The pid of the running PulseAudio, or null. */
  get pid(): number | null {
    return this.supervisor?.pid ?? null;
  }

  get running(): boolean {
    return this.supervisor?.state === 'running';
  }

  /** For the VM's `-audiodev`: null when there is no sound server (the VM then has no card). */
  backend(): QemuAudioBackend | null {
    if (!this.supervisor) return null;
    return {
      socket: this.paths.socket,
      speakerSink: SPEAKER_SINK,
      micSource: `${MIC_SINK}.monitor`,
    };
  }

  /** ffmpeg input arguments reading what the VM plays; null while the server is down. */
  capture(): { args: string[] } | null {
    return this.running ? { args: pulseCaptureArgs(this.paths.socket) } : null;
  }

  /** ffmpeg output arguments the VM records from; null while the server is down. */
  playback(): { args: string[] } | null {
    return this.running ? { args: pulsePlaybackArgs(this.paths.socket) } : null;
  }

  /**
   * Starts PulseAudio and resolves once its socket answers. Without pulseaudio or QEMU's `pa`
   * backend the target runs without sound (logged), rather than not at all.
   */
  async start(): Promise<void> {
    if (this.supervisor) return;
    const log = this.opts.log;
    const binary = this.opts.pulseBinary ?? 'pulseaudio';
    if (!findExecutable(binary)) {
      this._unavailable = `${binary} is not installed (apt-get install pulseaudio)`;
    } else if (!(await hasPulseBackend(this.opts.qemuBinary ?? 'qemu-system-x86_64'))) {
      this._unavailable = "QEMU has no 'pa' audio backend (apt-get install qemu-system-gui)";
    }
    if (this._unavailable) {
      log?.warn({ reason: this._unavailable }, 'the VM has no sound');
      return;
    }
    await mkdir(this.opts.runDir, { recursive: true, mode: 0o700 });
    await rm(this.paths.home, { recursive: true, force: true });
    await mkdir(this.paths.home, { recursive: true, mode: 0o700 });
    await rm(this.paths.socket, { force: true });
    const sup = new Supervisor({
      name: 'pulseaudio',
      command: binary,
      args: pulseArgs(this.paths),
      env: pulseEnv(this.paths),
      cwd: this.paths.home,
      pidfile: this.paths.pidfile,
      stopTimeoutMs: 2000,
      backoff: this.opts.backoff,
      // only the PulseAudio of this run folder (not the user's, not another checkout's)
      isStale: (argv) => argv.some((a) => a.includes(this.paths.socket)),
    });
    this.supervisor = sup;
    sup.on('output', (line, stream) => {
      // its warnings are about running as root without a session bus: expected here
      if (stream === 'stderr' && /^E: /.test(line)) log?.warn({ line }, 'pulseaudio');
    });
    sup.on('exited', (info) => {
      if (!info.expected) {
        log?.warn(
          { code: info.code, signal: info.signal, output: sup.recentOutput().slice(-3) },
          "pulseaudio exited: restarting it; the VM's sound stays off until QEMU restarts",
        );
      }
    });
    try {
      await sup.ensureStarted();
      await waitForSocket(this.paths.socket, this.opts.startTimeoutMs ?? 10_000, () =>
        Boolean(sup.pid),
      );
    } catch (err) {
      const said = sup.recentOutput().slice(-3).join(' | ');
      await this.stop();
      throw new Error(`${(err as Error).message}${said ? ` (pulseaudio: ${said})` : ''}`);
    }
    log?.info({ pid: sup.pid, socket: this.paths.socket }, 'pulseaudio started');
  }

  /** Stops PulseAudio (after the VM) and removes its socket and folder. */
  async stop(): Promise<void> {
    const sup = this.supervisor;
    this.supervisor = null;
    if (sup) {
      await sup.ensureStopped();
      sup.removeAllListeners();
    }
    await Promise.all(
      [this.paths.socket, this.paths.pidfile, this.paths.home].map((p) =>
        rm(p, { recursive: true, force: true }),
      ),
    );
  }
}
