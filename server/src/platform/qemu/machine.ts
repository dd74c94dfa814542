/**
 * The QEMU virtual machine the server owns as "the remote computer" (target `qemu`). One
 * qemu-system-x86_64 under a Supervisor (restarted with backoff if it dies), one QMP
 * connection re-made after every start, and the run state kept current from QMP events. The
 * other QEMU drivers (video, hid, atx, msd) share this machine's QMP through `command()`.
 *
 * Run folder (`<data_dir>/run/`): qmp.sock, vnc.sock, spice.sock, qemu.pid, serial.sock,
 * serial.log; the sound server's pa.sock, pulseaudio.pid and pulse/ (audio.ts).
 * The command line and what each device is for: docs/drivers.md, QEMU target.
 *
 * Power state table (from query-status, refreshed on every run-state event):
 * | power       | QEMU                         | RunState                                    |
 * |-------------|------------------------------|---------------------------------------------|
 * | unavailable | not running / QMP not up yet | -                                           |
 * | running     | guest CPU runs               | running                                     |
 * | paused      | stopped by `stop`            | paused, prelaunch, debug, ... (all others)  |
 * | shutdown    | the guest powered off        | shutdown (-no-shutdown keeps QEMU), guest-panicked |
 */
import { EventEmitter } from 'node:events';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Supervisor, type BackoffOptions, type ExitInfo } from '../../process/supervisor';
import type { QemuAudioBackend } from './pulse';
import { guestImagePaths, readGuestManifest, type GuestImage } from './guest';
import { qemuHelp } from './help';
import {
  connectQmpWithRetry,
  QmpClosedError,
  type QmpClient,
  type QmpCommands,
  type QmpEvent,
  type QmpRunState,
} from './qmp';
import type { Logger } from '../../log';

export type MachinePower = 'unavailable' | 'running' | 'paused' | 'shutdown';

/**
 * How the guest boots.
 * - `kernel` (default): QEMU loads the guest's uncompressed kernel and initramfs itself (PVH
 *   entry), prompt in about 5 s. QEMU gives this boot path priority over every drive.
 * - `iso`: BIOS boot, CD-ROM first, then guest.iso as a read-only disk (the remote computer's
 *   own system); about 5 s slower (isolinux reads through the BIOS, the kernel unpacks xz
 *   under TCG), but a medium in the CD-ROM boots instead, as on a real computer.
 */
export type GuestBoot = 'kernel' | 'iso';

export interface QemuMachineOptions {
  /** `<data_dir>/run`: sockets, pidfile, serial log. */
  runDir: string;
  guest?: GuestImage;
  boot?: GuestBoot;
  memoryMb?: number;
  /** TCG by default: /dev/kvm exists on our machines but crashes in the BIOS (architecture.md). */
  accel?: 'tcg' | 'kvm';
  /** The client-less SPICE listener that pins QEMU's display refresh at 30 ms; default: if built in. */
  spice?: boolean;
  qemuBinary?: string;
  extraArgs?: string[];
  /** The sound server the VM's sound card plays into, read at every start (null: no card). */
  audio?: () => QemuAudioBackend | null;
  log?: Logger;
  backoff?: BackoffOptions;
  /** For QMP to come up after a start. */
  startTimeoutMs?: number;
}

export interface RunPaths {
  dir: string;
  qmp: string;
  vnc: string;
  spice: string;
  pidfile: string;
  /** The guest's serial output, from each start (QEMU truncates it). */
  serial: string;
  /** The serial line itself, one client at a time (the device's terminal, terminal/backends.ts). */
  serialSock: string;
}

export interface QemuMachineEvents {
  /** Power state changed. */
  power: [power: MachinePower];
  /** A QEMU process started (the first time and after every restart). */
  started: [pid: number];
  exited: [info: ExitInfo];
  /** QMP is connected to the current QEMU: the moment to (re)connect VNC, re-apply state. */
  ready: [qmp: QmpClient];
  /** Every QMP event of the current QEMU. */
  qmpEvent: [event: QmpEvent];
}

const RUN_STATE_EVENTS = new Set([
  'STOP',
  'RESUME',
  'SHUTDOWN',
  'RESET',
  'POWERDOWN',
  'SUSPEND',
  'WAKEUP',
  'GUEST_PANICKED',
]);

export function powerOf(status: QmpRunState): MachinePower {
  if (status === 'running') return 'running';
  if (status === 'shutdown' || status === 'guest-panicked') return 'shutdown';
  return 'paused';
}

/** Whether this QEMU has SPICE (Debian builds it as a module). */
export async function hasSpice(qemuBinary: string): Promise<boolean> {
  return (await qemuHelp(qemuBinary, '-spice')) !== null;
}

export function runPaths(dir: string): RunPaths {
  return {
    dir,
    qmp: join(dir, 'qmp.sock'),
    vnc: join(dir, 'vnc.sock'),
    spice: join(dir, 'spice.sock'),
    pidfile: join(dir, 'qemu.pid'),
    serial: join(dir, 'serial.log'),
    serialSock: join(dir, 'serial.sock'),
  };
}

/** The VGA's monitor mode: QEMU's own EDID offers it as the preferred (native) mode. */
export interface VgaMode {
  width: number;
  height: number;
  /** Refresh rate of the EDID's mode; QEMU's default is 75 Hz. */
  hz?: number;
}

/** The VM's monitor before any EDID was applied: the guest's console at 1024x768. */
export const DEFAULT_VGA_MODE: VgaMode = { width: 1024, height: 768 };

/**
 * std VGA with an id (input-send-event's `device` names a display; the USB keyboard and tablet
 * are bound to it) and an EDID whose preferred mode is `mode`: the guest's bochs DRM driver
 * sets it at boot. VGA memory: the guest's DRM VRAM helper refuses a mode larger than half of
 * it, so three 32-bit frames rounded up to a power of two, at least 16 MiB (1080p: 32, 4K: 128). `refresh_rate` (mHz) keeps QEMU's timing
 * within a DTD's 655 MHz pixel clock: 4K at its default 75 Hz would not fit.
 */
export function vgaDevice(mode: VgaMode | null | undefined): string {
  const m = mode ?? DEFAULT_VGA_MODE;
  const mb = Math.max(16, 2 ** Math.ceil(Math.log2((m.width * m.height * 4 * 3) / 2 ** 20)));
  const refresh = m.hz ? `,refresh_rate=${Math.round(m.hz * 1000)}` : '';
  return `VGA,id=video0,edid=on,xres=${m.width},yres=${m.height}${refresh},vgamem_mb=${mb}`;
}

export interface CommandLineInput {
  paths: RunPaths;
  /** The monitor mode (null: DEFAULT_VGA_MODE). */
  display?: VgaMode | null;
  guest: GuestImage;
  cmdline: string;
  boot: GuestBoot;
  memoryMb: number;
  accel: 'tcg' | 'kvm';
  spice: boolean;
  /** The VM's sound card and its PulseAudio (drivers/qemu/audio.ts); none without. */
  audio?: QemuAudioBackend | null;
  extraArgs?: string[];
}

/** An option value for QEMU's `key=value,...` syntax (a comma is doubled). */
const optValue = (v: string): string => v.replaceAll(',', ',,');

/**
 * The sound card: intel-hda with an hda-duplex codec (line out and line in), on QEMU's `pa`
 * backend. 48 kHz both ways as the sinks run (no resampling). `use-timer=off`: the codec moves
 * the guest's samples when PulseAudio asks for them, not by the wall clock (which drops sound
 * when QEMU's main loop is late on a busy host); then an 80 ms PulseAudio buffer covers QEMU's
 * stalls without delaying a sound's start, as the guest's own buffer is ahead (measured: guest
 * `tone` to an ffmpeg capture 20-30 ms; 10 ms with the timer gave holes in a 60 s tone under
 * load). Input: 10 ms, for the microphone's delay. `mixer=off`: no amplifiers in the codec, so
 * the guest has no volume to unmute (the generic HDA driver leaves the amps muted) and the sound
 * passes at the level it was made.
 */
export function audioArgs(a: QemuAudioBackend): string[] {
  const audiodev = [
    'pa,id=snd0',
    `server=unix:${optValue(a.socket)}`,
    `out.name=${optValue(a.speakerSink)}`,
    `in.name=${optValue(a.micSource)}`,
    'out.frequency=48000,in.frequency=48000',
    'out.latency=80000,in.latency=10000',
    'timer-period=5000',
  ].join(',');
  return [
    ...['-audiodev', audiodev],
    ...[
      '-device',
      'intel-hda,id=sound0',
      '-device',
      'hda-duplex,audiodev=snd0,mixer=off,use-timer=off',
    ],
  ];
}

/** QEMU's arguments (docs/drivers.md explains each). */
export function qemuArgs(c: CommandLineInput): string[] {
  const args = [
    ...['-name', 'kvm-target', '-nodefaults', '-no-user-config'],
    // `accel=` inside -machine would break `-accel tcg,...` options (architecture.md).
    ...['-machine', 'pc', '-accel', c.accel, '-m', String(c.memoryMb), '-smp', '1'],
    ...['-nic', 'none', '-no-shutdown', '-display', 'none'],
    // -vga std cannot carry an id nor the EDID's mode: vgaDevice().
    ...['-vga', 'none', '-device', vgaDevice(c.display)],
    ...['-vnc', `unix:${c.paths.vnc}`],
    ...(c.spice ? ['-spice', `unix=on,addr=${c.paths.spice},disable-ticketing=on`] : []),
    ...['-qmp', `unix:${c.paths.qmp},server=on,wait=off`],
    // The serial line on a socket for the terminal; its log is the file `-serial file:` wrote
    // before, truncated at each start as that was (logappend=off).
    ...[
      '-chardev',
      `socket,id=serial0,path=${c.paths.serialSock},server=on,wait=off,` +
        `logfile=${c.paths.serial},logappend=off`,
    ],
    ...['-serial', 'chardev:serial0'],
    // USB keyboard and tablet bound to the display; the PS/2 keyboard and mouse of the pc
    // machine stay for `input-send-event` without a device and relative moves.
    ...['-usb', '-device', 'usb-kbd,id=kbd,display=video0'],
    ...['-device', 'usb-tablet,id=tablet,display=video0'],
    // A USB 3 controller for the virtual media drives: on the UHCI of -usb (USB 1.1) a flash
    // drive moves about 1 MB/s.
    ...['-device', 'qemu-xhci,id=xhci'],
    // The CD-ROM drive, empty: virtual media changes its medium through QMP.
    ...['-drive', 'if=none,id=cd0,media=cdrom,readonly=on'],
    ...['-device', 'ide-cd,drive=cd0,id=cdrom,bootindex=1'],
    ...(c.audio ? audioArgs(c.audio) : []),
  ];
  if (c.boot === 'kernel') {
    args.push('-kernel', c.guest.vmlinux, '-initrd', c.guest.initrd, '-append', c.cmdline);
  } else {
    args.push(
      ...['-drive', `if=none,id=disk0,format=raw,readonly=on,file=${c.guest.iso}`],
      ...['-device', 'virtio-blk-pci,drive=disk0,id=disk,bootindex=2'],
    );
  }
  return [...args, ...(c.extraArgs ?? [])];
}

export class QemuMachine extends EventEmitter<QemuMachineEvents> {
  readonly paths: RunPaths;
  private readonly opts: QemuMachineOptions;
  private readonly log: Logger | undefined;
  private supervisor: Supervisor | null = null;
  private client: QmpClient | null = null;
  private _power: MachinePower = 'unavailable';
  private disposed = false;
  /** Bumped on every start: a slow QMP connect of an old QEMU is dropped. */
  private generation = 0;
  private readyWaiters: Array<{ resolve: (qmp: QmpClient) => void; reject: (e: Error) => void }> =
    [];
  /** The command line without the display; set by init. */
  private launch: Omit<CommandLineInput, 'display'> | null = null;
  /** The Supervisor's own args array: rebuilt in place before a power cycle. */
  private readonly args: string[] = [];
  /** The mode the next QEMU start gets (the display driver sets it). */
  private wantedDisplay: VgaMode | null = null;
  /** The mode `args` carry, and the one the running QEMU was started with. */
  private argsDisplay: VgaMode | null = null;
  private runningDisplay: VgaMode | null = null;

  constructor(opts: QemuMachineOptions) {
    super();
    this.opts = opts;
    this.log = opts.log;
    this.paths = runPaths(opts.runDir);
  }

  get power(): MachinePower {
    return this._power;
  }

  getPowerState(): MachinePower {
    return this._power;
  }

  /** The QMP client of the running QEMU, or null between a crash and the restart. */
  get qmp(): QmpClient | null {
    return this.client && !this.client.isClosed ? this.client : null;
  }

  /** The pid of the running QEMU, or null. */
  get pid(): number | null {
    return this.supervisor?.pid ?? null;
  }

  /** Starts the VM and resolves once QMP answers. */
  async init(): Promise<void> {
    if (this.supervisor) return;
    this.disposed = false;
    const guest = this.opts.guest ?? guestImagePaths();
    const manifest = await readGuestManifest(guest);
    await mkdir(this.paths.dir, { recursive: true, mode: 0o700 });
    const binary = this.opts.qemuBinary ?? 'qemu-system-x86_64';
    const spice = this.opts.spice ?? (await hasSpice(binary));
    this.launch = {
      paths: this.paths,
      guest,
      cmdline: manifest.cmdline,
      boot: this.opts.boot ?? 'kernel',
      memoryMb: this.opts.memoryMb ?? 256,
      accel: this.opts.accel ?? 'tcg',
      spice,
      extraArgs: this.opts.extraArgs,
    };
    this.rebuildArgs();
    const sup = new Supervisor({
      name: 'qemu',
      command: binary,
      // Read at every spawn: a power cycle rebuilds it in place (a crash restart reuses it).
      args: this.args,
      cwd: this.paths.dir,
      pidfile: this.paths.pidfile,
      stopTimeoutMs: 3000,
      backoff: this.opts.backoff,
      // Only a QEMU of this run folder counts as ours (not another checkout's VM).
      isStale: (argv) => argv.some((a) => a.includes(this.paths.qmp)),
    });
    this.supervisor = sup;
    sup.on('started', (pid) => {
      this.runningDisplay = this.argsDisplay;
      this.emit('started', pid);
      void this.connect(pid);
    });
    sup.on('exited', (info) => {
      this.dropClient();
      this.setPower('unavailable');
      this.emit('exited', info);
      if (!info.expected) {
        this.log?.warn(
          { code: info.code, signal: info.signal, output: sup.recentOutput().slice(-5) },
          'qemu exited',
        );
      }
    });
    sup.on('restarting', (delayMs, attempt) =>
      this.log?.warn({ delayMs, attempt }, 'restarting qemu'),
    );
    sup.on('output', (line, stream) => {
      if (stream === 'stderr') this.log?.warn({ line }, 'qemu');
    });
    try {
      await this.startReady(sup);
    } catch (err) {
      const said = sup.recentOutput().slice(-5).join(' | ');
      await this.dispose();
      throw new Error(`${(err as Error).message}${said ? ` (qemu: ${said})` : ''}`);
    }
    this.log?.info({ pid: sup.pid, spice, boot: this.opts.boot ?? 'kernel' }, 'qemu started');
  }

  /**
   * The monitor mode for the next QEMU start (the EDID's preferred mode; null: the default).
   * QEMU cannot change a VGA's EDID while it runs: it takes effect at `powerCycle()`.
   */
  setDisplay(mode: VgaMode | null): void {
    this.wantedDisplay = mode ? { width: mode.width, height: mode.height, hz: mode.hz } : null;
  }

  /** The monitor mode the running QEMU offers (the default before any was set). */
  get display(): VgaMode {
    return this.runningDisplay ?? this.wantedDisplay ?? DEFAULT_VGA_MODE;
  }

  /** True while a set display mode waits for the next QEMU start. */
  get displayPending(): boolean {
    if (!this.supervisor) return false;
    const want = this.wantedDisplay ?? DEFAULT_VGA_MODE;
    const run = this.runningDisplay ?? DEFAULT_VGA_MODE;
    return want.width !== run.width || want.height !== run.height || want.hz !== run.hz;
  }

  /**
   * A real power cycle: QEMU stops and starts again with the current command line (the new
   * monitor mode), as a PC reads its monitor's EDID at boot. Resolves once QMP answers; the
   * other drivers re-attach on `ready` as after a crash.
   */
  async powerCycle(): Promise<void> {
    const sup = this.supervisor;
    if (!sup) throw new Error('The VM is not running');
    this.rebuildArgs();
    await sup.ensureStopped();
    await this.startReady(sup);
    this.log?.info({ pid: sup.pid, display: this.runningDisplay }, 'qemu power-cycled');
  }

  /** Starts QEMU and resolves once its QMP answers (within startTimeoutMs). */
  private async startReady(sup: Supervisor): Promise<void> {
    const ready = this.waitReady(this.opts.startTimeoutMs ?? 15_000);
    try {
      await sup.ensureStarted();
      await ready;
    } catch (err) {
      ready.catch(() => undefined);
      throw err;
    }
  }

  private rebuildArgs(): void {
    if (!this.launch) return;
    this.argsDisplay = this.wantedDisplay;
    this.args.splice(
      0,
      this.args.length,
      ...qemuArgs({ ...this.launch, display: this.argsDisplay, audio: this.opts.audio?.() }),
    );
  }

  /** Stops QEMU (SIGTERM, then SIGKILL) and closes QMP. */
  async dispose(): Promise<void> {
    this.disposed = true;
    const sup = this.supervisor;
    this.supervisor = null;
    this.dropClient();
    if (sup) {
      await sup.ensureStopped();
      sup.removeAllListeners();
    }
    this.setPower('unavailable');
    this.runningDisplay = null;
    for (const w of this.readyWaiters.splice(0)) w.reject(new Error('machine disposed'));
    await Promise.all(
      [this.paths.qmp, this.paths.vnc, this.paths.spice].map((p) => rm(p, { force: true })),
    );
  }

  /** The current QMP client, waiting up to `timeoutMs` for QEMU to (re)start. */
  waitReady(timeoutMs = 15_000): Promise<QmpClient> {
    const current = this.qmp;
    if (current) return Promise.resolve(current);
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (qmp: QmpClient) => {
          clearTimeout(timer);
          resolve(qmp);
        },
        reject: (err: Error) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer = setTimeout(() => {
        this.readyWaiters = this.readyWaiters.filter((w) => w !== waiter);
        reject(new Error(`QEMU not ready in ${timeoutMs} ms`));
      }, timeoutMs);
      this.readyWaiters.push(waiter);
    });
  }

  /** Runs a QMP command on the current QEMU (waits for a restart in progress). */
  async command<K extends keyof QmpCommands>(
    command: K,
    args?: QmpCommands[K]['args'],
    opts: { timeoutMs?: number } = {},
  ): Promise<QmpCommands[K]['result']> {
    const qmp = await this.waitReady(opts.timeoutMs ?? 10_000);
    return qmp.execute(
      command as string,
      args as Record<string, unknown> | undefined,
      opts,
    ) as Promise<QmpCommands[K]['result']>;
  }

  /** Re-reads the run state from QEMU (events keep it current; this is for after a start). */
  async refreshPower(): Promise<MachinePower> {
    const qmp = this.qmp;
    if (!qmp) return this._power;
    const { status } = await qmp.execute('query-status');
    if (qmp === this.client) this.setPower(powerOf(status));
    return this._power;
  }

  private async connect(pid: number): Promise<void> {
    const generation = ++this.generation;
    const sup = this.supervisor;
    let qmp: QmpClient;
    try {
      qmp = await connectQmpWithRetry(this.paths.qmp, this.opts.startTimeoutMs ?? 15_000, {
        isAlive: () => sup?.pid === pid,
      });
    } catch (err) {
      if (generation === this.generation && !this.disposed) {
        this.log?.error({ err: (err as Error).message }, 'no QMP from qemu: restarting it');
        // A QEMU without a control channel is useless: kill it, the supervisor restarts it.
        if (sup?.pid === pid) process.kill(pid, 'SIGKILL');
      }
      return;
    }
    if (generation !== this.generation || this.disposed || sup?.pid !== pid) {
      qmp.close();
      return;
    }
    this.client = qmp;
    qmp.on('event', (event) => {
      this.emit('qmpEvent', event);
      if (event.event === 'RESUME') this.setPower('running');
      if (RUN_STATE_EVENTS.has(event.event)) {
        this.refreshPower().catch((err: unknown) => {
          if (!(err instanceof QmpClosedError)) {
            this.log?.warn({ err: (err as Error).message }, 'query-status failed');
          }
        });
      }
    });
    qmp.on('close', () => {
      if (this.client === qmp) {
        this.client = null;
        this.setPower('unavailable');
      }
    });
    try {
      await this.refreshPower();
    } catch {
      return; // closed again already: the next start connects anew
    }
    this.emit('ready', qmp);
    for (const w of this.readyWaiters.splice(0)) w.resolve(qmp);
  }

  private dropClient(): void {
    this.generation++;
    const c = this.client;
    this.client = null;
    c?.close();
  }

  private setPower(power: MachinePower): void {
    if (power === this._power) return;
    this._power = power;
    this.emit('power', power);
  }
}
