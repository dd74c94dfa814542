/**
 * The base of the apps that live around a vendor's command-line tool and daemon (Tailscale,
 * NetBird, ZeroTier; docs/apps.md "Memory cap, updates and hung tools"). What they share:
 *
 * - `CliTool`: is the tool installed (its path from the config, `findExecutable`), its version
 *   (cached briefly), and every command through `host.runner` + `hostArgv` (inside the device's
 *   namespace on the developer targets) with `apps.command_timeout_ms`. A hung tool is killed and
 *   becomes `AppToolError` "tailscale status did not answer within 10 s"; output that is not JSON
 *   or not the expected shape is "tailscale printed something unreadable"; a non-zero exit names
 *   what the tool said. Secrets given as `secrets` never appear in a message.
 * - `AppDaemon`: the tool's daemon under the Supervisor (restart with backoff, pdeathsig,
 *   pidfile in `host.runDir`), its resident memory sampled every few seconds (the process and its
 *   children); over the cap for `CAP_SAMPLES` samples in a row it is stopped and says so
 *   (`capError`). Go daemons get GOMEMLIMIT below the cap.
 * - `AppStore`: the app's own settings (enable + options) in `<dataDir>/<id>/app.json`, written
 *   atomically, read tolerant of a missing or broken file (defaults).
 * - `OneAtATime`: one operation per app at a time; a second one while it runs is 409 AppBusyError
 *   (not queued: a bind that waits behind a slow login would act on a state nobody sees).
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type * as z from '@kvm/protocol/zod';
import { APP_NAMES, type AppId } from '@kvm/protocol/apps';
import { BadRequestError, IsBusyError } from '../../errors';
import { CommandError, type CommandResult } from '../../process/run';
import { findExecutable, Supervisor } from '../../process/supervisor';
import { atomicWriteFile } from '../../storage/atomic';
import { SerialQueue } from '../../sync/serial-queue';
import { hostArgv, type AppHost } from './types';

/** How long a probe (installed? version?) is trusted. */
export const PROBE_TTL_MS = 30_000;
/** How often a running daemon's memory is sampled. */
export const MEMORY_SAMPLE_MS = 5_000;
/** Samples over the cap in a row before the daemon is stopped (one spike is not a leak). */
export const CAP_SAMPLES = 3;
/** How much of a tool's stderr an error message carries. */
const SAID_CHARS = 300;
/** Output of one command past which it is cut off (a tool that floods). */
const MAX_OUTPUT = 1024 * 1024;

/** How a tool failed: hung (killed), printed garbage, exited non-zero, or could not start. */
export type AppToolFailure = 'timeout' | 'unreadable' | 'failed' | 'spawn';

/** The tool failed, hung or printed something unreadable (GL answers 400 for a failed command). */
export class AppToolError extends BadRequestError {
  constructor(
    message: string,
    readonly kind: AppToolFailure = 'failed',
  ) {
    super(message);
  }
}

/** The app's tool (or its daemon) is not on this device. */
export class AppNotInstalledError extends BadRequestError {}

/** Another operation of this app is running (409, not queued). */
export class AppBusyError extends IsBusyError {
  constructor(id: AppId) {
    super(`${APP_NAMES[id]} is busy with another operation; try again when it has finished`);
  }
}

/** Replaces every secret in `text` with `***` (auth keys, setup keys). */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length > 0) out = out.split(s).join('***');
  return out;
}

/** Whole seconds when the value is a multiple of 1000, else ms ("10 s", "1500 ms"). */
export function formatDuration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

export interface ToolProbe {
  installed: boolean;
  /** The tool's path when installed. */
  path: string | null;
  version: string | null;
  /** The missing program(s), for `detail` ("tailscale is not installed on this device"); null when installed. */
  missing: string | null;
}

/**
 * Why an app cannot run before its tool is asked anything: its tool (or a program it requires) is
 * not installed, or its memory cap stopped it (`capError`); null when neither.
 */
export function notRunnable(
  probe: ToolProbe,
  capError: string | null,
): { state: 'not_installed' | 'error'; detail: string } | null {
  if (!probe.installed) {
    return { state: 'not_installed', detail: `${probe.missing} is not installed on this device` };
  }
  if (capError) return { state: 'error', detail: capError };
  return null;
}

export interface CliToolOptions {
  id: AppId;
  host: AppHost;
  /** The tool as configured: a name looked up on PATH, or a path. */
  tool: string;
  /** Other programs the app needs (its daemon), as configured; each must be installed too. */
  requires?: readonly string[];
  /** Put before every command's own arguments (`--socket=<path>`). */
  globalArgs?: readonly string[];
  /** The arguments that print the version (`['version']`). */
  versionArgs: readonly string[];
  /** The version from that output; default its first non-empty line. */
  parseVersion?: (stdout: string) => string | null;
  /** `apps.command_timeout_ms`. */
  commandTimeoutMs: number;
  /** Tests: pretend a program is installed. */
  findExecutable?: (command: string) => string | null;
  now?: () => number;
}

export interface ToolRunOptions {
  /** What the command is in messages ("tailscale status"); default the tool and the first argument. */
  label?: string;
  timeoutMs?: number;
  /** Values never to show in an error message or log (auth keys). */
  secrets?: readonly string[];
  input?: string;
  /** Each chunk of stdout as it comes (a login URL printed before the command ends). */
  onStdout?: (chunk: string) => void;
  /** Aborting kills the command. */
  signal?: AbortSignal;
}

/** The program name of a configured path (`/usr/sbin/tailscaled` -> `tailscaled`). */
function programName(configured: string): string {
  return configured.slice(configured.lastIndexOf('/') + 1) || configured;
}

/** A vendor's command-line tool, run where the apps live. */
export class CliTool {
  readonly name: string;
  private cached: { at: number; probe: ToolProbe } | null = null;
  private probing: Promise<ToolProbe> | null = null;
  private readonly find: (command: string) => string | null;
  private readonly now: () => number;

  constructor(private readonly opts: CliToolOptions) {
    this.name = programName(opts.tool);
    this.find = opts.findExecutable ?? findExecutable;
    this.now = opts.now ?? (() => performance.now());
  }

  get timeoutMs(): number {
    return this.opts.commandTimeoutMs;
  }

  /** Forgets the cached probe (after an install, or in tests). */
  forget(): void {
    this.cached = null;
  }

  /** Installed? which version? Cached for PROBE_TTL_MS; never throws. */
  async probe(): Promise<ToolProbe> {
    if (this.cached && this.now() - this.cached.at < PROBE_TTL_MS) return this.cached.probe;
    this.probing ??= this.probeNow().finally(() => (this.probing = null));
    const probe = await this.probing;
    this.cached = { at: this.now(), probe };
    return probe;
  }

  private async probeNow(): Promise<ToolProbe> {
    const path = this.find(this.opts.tool);
    const missing = [this.opts.tool, ...(this.opts.requires ?? [])]
      .filter((p, i) => (i === 0 ? path === null : this.find(p) === null))
      .map(programName);
    if (missing.length > 0) {
      return { installed: false, path, version: null, missing: missing.join(' and ') };
    }
    let version: string | null = null;
    try {
      const { stdout } = await this.runRaw(path as string, this.opts.versionArgs, {});
      version = (this.opts.parseVersion ?? firstLine)(stdout);
    } catch {
      // installed but not answering its version: the status will say what is wrong
    }
    return { installed: true, path, version, missing: null };
  }

  /** Throws AppNotInstalledError when the tool (or what it requires) is missing. */
  async requireInstalled(): Promise<ToolProbe> {
    const probe = await this.probe();
    if (!probe.installed) {
      throw new AppNotInstalledError(`${probe.missing} is not installed on this device`);
    }
    return probe;
  }

  private runRaw(
    path: string,
    args: readonly string[],
    opts: ToolRunOptions,
  ): Promise<CommandResult> {
    const [file, argv] = hostArgv(this.opts.host, path, [...(this.opts.globalArgs ?? []), ...args]);
    return this.opts.host.runner(file, argv, {
      timeoutMs: opts.timeoutMs ?? this.opts.commandTimeoutMs,
      maxBuffer: MAX_OUTPUT,
      ...(opts.input !== undefined ? { input: opts.input } : {}),
      ...(opts.onStdout ? { onStdout: opts.onStdout } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }

  /**
   * Runs `<tool> <globalArgs> <args>` where the apps live. Rejects with AppNotInstalledError, or
   * AppToolError naming the command: it did not answer in time (killed), could not start, or
   * exited non-zero (with what it said, secrets masked).
   */
  async run(args: readonly string[], opts: ToolRunOptions = {}): Promise<CommandResult> {
    const probe = await this.requireInstalled();
    const label = opts.label ?? `${this.name} ${args[0] ?? ''}`.trim();
    const secrets = opts.secrets ?? [];
    try {
      return await this.runRaw(probe.path as string, args, opts);
    } catch (err) {
      throw toolError(label, err, opts.timeoutMs ?? this.opts.commandTimeoutMs, secrets);
    }
  }

  /**
   * `run`, its stdout parsed as JSON and checked with `schema` (which should be tolerant of
   * unknown fields: `z.looseObject`). Garbage is AppToolError "<label> printed something unreadable".
   */
  async runJson<S extends z.ZodMiniType>(
    args: readonly string[],
    schema: S,
    opts: ToolRunOptions = {},
  ): Promise<z.output<S>> {
    const label = opts.label ?? `${this.name} ${args[0] ?? ''}`.trim();
    const { stdout } = await this.run(args, { ...opts, label });
    return parseToolJson(label, stdout, schema);
  }
}

function firstLine(stdout: string): string | null {
  const line = stdout.split('\n').find((l) => l.trim() !== '');
  return line ? line.trim().slice(0, 100) : null;
}

/** Parses a tool's JSON output with `schema`; AppToolError "<label> printed something unreadable" otherwise. */
export function parseToolJson<S extends z.ZodMiniType>(
  label: string,
  stdout: string,
  schema: S,
): z.output<S> {
  let raw: unknown;
  try {
    raw = JSON.parse(stdout);
  } catch {
    throw new AppToolError(`${label} printed something unreadable (not JSON)`, 'unreadable');
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new AppToolError(
      `${label} printed something unreadable (unexpected JSON${where})`,
      'unreadable',
    );
  }
  return parsed.data;
}

/** A runner's failure as AppToolError, in words: the timeout, the spawn error, or what the tool said. */
export function toolError(
  label: string,
  err: unknown,
  timeoutMs: number,
  secrets: readonly string[] = [],
): AppToolError {
  if (err instanceof AppToolError) return err;
  if (err instanceof AppNotInstalledError) return new AppToolError(err.message, 'spawn');
  if (err instanceof CommandError) {
    if (err.timedOut) {
      return new AppToolError(
        `${label} did not answer within ${formatDuration(timeoutMs)}`,
        'timeout',
      );
    }
    const said = redact((err.stderr.trim() || err.stdout.trim()).slice(0, SAID_CHARS), secrets);
    if (said) return new AppToolError(`${label} failed: ${said}`);
    if (typeof err.code === 'string')
      return new AppToolError(`${label} could not run (${err.code})`);
    return new AppToolError(
      `${label} failed (${err.signal ? `killed by ${err.signal}` : `exit ${String(err.code)}`})`,
    );
  }
  const message = err instanceof Error ? err.message : String(err);
  return new AppToolError(`${label} failed: ${redact(message, secrets).slice(0, SAID_CHARS)}`);
}

/** One operation per app at a time; a second while one runs is AppBusyError (409). */
export class OneAtATime {
  private readonly queue: SerialQueue;

  constructor(id: AppId) {
    this.queue = new SerialQueue({ max: 0, busyError: () => new AppBusyError(id) });
  }

  get busy(): boolean {
    return this.queue.pending > 0;
  }

  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.queue.run(fn);
  }
}

/** An app's own settings in `<dataDir>/<id>/app.json` (0600, folder 0700), written atomically. */
export class AppStore<S extends z.ZodMiniType> {
  readonly dir: string;
  readonly path: string;

  constructor(
    host: Pick<AppHost, 'dataDir'>,
    id: AppId,
    private readonly schema: S,
    private readonly defaults: z.output<S>,
  ) {
    this.dir = join(host.dataDir, id);
    this.path = join(this.dir, 'app.json');
  }

  /** The kept settings; the defaults when the file is missing or broken (never throws). */
  async load(): Promise<z.output<S>> {
    try {
      const parsed = this.schema.safeParse(JSON.parse(await readFile(this.path, 'utf8')));
      return parsed.success ? parsed.data : this.defaults;
    } catch {
      return this.defaults;
    }
  }

  async save(value: z.output<S>): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await atomicWriteFile(this.path, `${JSON.stringify(value, null, 2)}\n`, 0o600);
  }
}

/** VmRSS of `pid` in bytes, or null when it is gone. */
async function vmRss(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return null;
  }
}

/** The children of `pid` (every thread's `children`). */
async function childrenOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  try {
    for (const tid of await readdir(`/proc/${pid}/task`)) {
      const text = await readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '');
      for (const c of text.split(/\s+/)) if (c) out.push(Number(c));
    }
  } catch {
    // gone
  }
  return out;
}

/** Resident bytes of `pid` and all its descendants; null when `pid` is gone. */
export async function treeRss(pid: number): Promise<number | null> {
  const own = await vmRss(pid);
  if (own === null) return null;
  let total = own;
  const seen = new Set([pid]);
  const toVisit = await childrenOf(pid);
  while (toVisit.length > 0 && seen.size < 256) {
    const next = toVisit.pop() as number;
    if (seen.has(next)) continue;
    seen.add(next);
    total += (await vmRss(next)) ?? 0;
    toVisit.push(...(await childrenOf(next)));
  }
  return total;
}

/** "used N MiB, over the cap of M MiB" (whole MiB). */
export function overCapText(rss: number, limitBytes: number): string {
  const mib = (n: number): number => Math.round(n / (1024 * 1024));
  return `used ${mib(rss)} MiB, over the cap of ${mib(limitBytes)} MiB`;
}

export interface MemoryCapOptions {
  limitBytes: number;
  /** How often `read()` is sampled; default MEMORY_SAMPLE_MS. */
  sampleMs?: number;
  /** The resident bytes of what is capped now; null when it is not running. */
  read: () => Promise<number | null>;
  /** Called once, after sampling stopped, when CAP_SAMPLES samples in a row were over the cap. */
  onOver: (rss: number) => void | Promise<void>;
}

/**
 * The memory cap of an app's processes (`apps.memory_limit_mb`; docs/apps.md "Memory cap"):
 * sampled every few seconds while started, over the cap CAP_SAMPLES times in a row (one spike is
 * not a leak) and `onOver` stops the app. Shared by the CLI apps' daemons and WireGuard.
 */
export class MemoryCap {
  private timer: NodeJS.Timeout | null = null;
  private overCount = 0;
  private last: number | null = null;

  constructor(private readonly opts: MemoryCapOptions) {}

  /** The last sample; null before one, after a stop, or when nothing ran. */
  get lastRss(): number | null {
    return this.last;
  }

  start(): void {
    if (this.timer) return;
    this.overCount = 0;
    this.timer = setInterval(() => void this.sample(), this.opts.sampleMs ?? MEMORY_SAMPLE_MS);
    this.timer.unref();
    void this.sample();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.overCount = 0;
    this.last = null;
  }

  /** One sample now (the timer's step; tests call it directly). */
  async sample(): Promise<void> {
    const rss = await this.opts.read();
    this.last = rss;
    if (rss === null) return;
    this.overCount = rss > this.opts.limitBytes ? this.overCount + 1 : 0;
    if (this.overCount < CAP_SAMPLES) return;
    this.stop();
    await this.opts.onOver(rss);
  }
}

export interface AppDaemonOptions {
  id: AppId;
  host: AppHost;
  /** The daemon as configured (a name on PATH or a path). */
  program: string;
  args: readonly string[];
  env?: Readonly<Record<string, string>>;
  /** `apps.memory_limit_mb`. */
  memoryLimitMb: number;
  /** A Go daemon: GOMEMLIMIT at 80 % of the cap, so its collector works before the cap is hit. */
  go?: boolean;
  sampleMs?: number;
  /** Tests: the resident bytes of a pid's tree. */
  readRss?: (pid: number) => Promise<number | null>;
  findExecutable?: (command: string) => string | null;
}

/**
 * An app's daemon under the Supervisor, where the apps live, with its memory capped. `start()`
 * clears a previous cap stop; `capError` says why it was stopped by the cap.
 */
export class AppDaemon {
  private supervisor: Supervisor | null = null;
  private _capError: string | null = null;
  private readonly cap: MemoryCap;
  private readonly name: string;

  constructor(private readonly opts: AppDaemonOptions) {
    const readRss = opts.readRss ?? treeRss;
    this.name = programName(opts.program);
    this.cap = new MemoryCap({
      limitBytes: this.limitBytes,
      ...(opts.sampleMs !== undefined ? { sampleMs: opts.sampleMs } : {}),
      read: async () => {
        const pid = this.pid;
        return pid === null || !this.running ? null : readRss(pid);
      },
      onOver: async (rss) => {
        this._capError = `stopped: ${overCapText(rss, this.limitBytes)}`;
        this.opts.host.log.warn(
          { app: this.opts.id, rss_bytes: rss, limit_bytes: this.limitBytes },
          'app daemon over its memory cap: stopped',
        );
        await this.stop();
      },
    });
  }

  get limitBytes(): number {
    return this.opts.memoryLimitMb * 1024 * 1024;
  }

  /** The daemon's process is alive (spawned and not exited). */
  get running(): boolean {
    return this.supervisor?.state === 'running';
  }

  /** Started and wanted (running, or restarting after a crash). */
  get wanted(): boolean {
    const s = this.supervisor?.state;
    return s === 'running' || s === 'starting' || s === 'backoff';
  }

  get pid(): number | null {
    return this.supervisor?.pid ?? null;
  }

  /** The last sample of its resident memory; null when not running. */
  get rssBytes(): number | null {
    return this.running ? this.cap.lastRss : null;
  }

  /** "stopped: used N MiB, over the cap of M MiB" after the cap stopped it; null otherwise. */
  get capError(): string | null {
    return this._capError;
  }

  /** The daemon's last lines of output (for error details). */
  recentOutput(): string[] {
    return this.supervisor?.recentOutput() ?? [];
  }

  async start(): Promise<void> {
    const find = this.opts.findExecutable ?? findExecutable;
    const path = find(this.opts.program);
    if (path === null) {
      throw new AppNotInstalledError(`${this.name} is not installed on this device`);
    }
    await this.opts.host.ready();
    await mkdir(join(this.opts.host.dataDir, this.opts.id), { recursive: true, mode: 0o700 });
    await mkdir(this.opts.host.runDir, { recursive: true, mode: 0o700 });
    this._capError = null;
    if (!this.supervisor) {
      const [command, args] = hostArgv(this.opts.host, path, this.opts.args);
      const env: NodeJS.ProcessEnv = { ...process.env, ...this.opts.env };
      if (this.opts.go) env['GOMEMLIMIT'] = `${Math.floor(this.opts.memoryLimitMb * 0.8)}MiB`;
      this.supervisor = new Supervisor({
        name: `${this.opts.id}:${this.name}`,
        command,
        args,
        env,
        pidfile: join(this.opts.host.runDir, `${this.opts.id}.pid`),
        isStale: (argv) => argv.some((a) => a === path || a.endsWith(`/${this.name}`)),
        keepLines: 20,
      });
      this.supervisor.on('output', (line) =>
        this.opts.host.log.debug({ app: this.opts.id, line }, 'app daemon output'),
      );
    }
    await this.supervisor.ensureStarted();
    this.cap.start();
  }

  async stop(): Promise<void> {
    this.cap.stop();
    await this.supervisor?.ensureStopped();
  }

  /** Takes one memory sample now (the timer's step; tests call it directly). */
  sample(): Promise<void> {
    return this.cap.sample();
  }

  async dispose(): Promise<void> {
    this.cap.stop();
    await this.supervisor?.ensureStopped();
  }
}
