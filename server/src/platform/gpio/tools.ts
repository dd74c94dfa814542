/**
 * A typed wrapper around libgpiod 1.6's command-line tools (Debian's `gpiod`): `gpioinfo`,
 * `gpioget`, `gpioset` and `gpiomon`. Chosen over a Node binding: no native module to build for
 * every board's Node, Debian ships and maintains the tools, and each holder is a plain child
 * process the kernel releases the lines of when it ends (docs/drivers.md "ATX over GPIO").
 *
 * Polarity is never the tools' (`-l` applies to every line of a call): callers pass physical
 * values and translate active-low themselves, so each line has its own.
 *
 * Long-lived children (a line held at a value, the edge monitor, a timed pulse) are spawned
 * through `setpriv --pdeathsig KILL` where it exists, so the kernel ends them when the server
 * dies, in their own process group, and killed from a `process.on('exit')` hook on every other
 * exit path: a held line is never left to an orphan.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, watch } from 'node:fs';
import { join } from 'node:path';
import { findSetpriv } from '../../process/supervisor';
import { runCommand, CommandError, type CommandRunner } from '../../process/run';

/** One line of `gpioinfo`. */
export interface GpioLineInfo {
  offset: number;
  /** null: unnamed. */
  name: string | null;
  /** Who holds it (the consumer label), null when nobody does. */
  consumer: string | null;
  used: boolean;
  direction: 'input' | 'output';
  activeLow: boolean;
}

export interface GpioChipInfo {
  /** The kernel's name (`gpiochip1`). */
  name: string;
  lines: GpioLineInfo[];
}

/** Why a tool failed, from its message (the tools say it in strerror words). */
export type GpioFailure = 'busy' | 'missing' | 'other';

export class GpioToolError extends Error {
  constructor(
    readonly kind: GpioFailure,
    message: string,
  ) {
    super(message);
    this.name = 'GpioToolError';
  }
}

/** What a tool's stderr means: a line another process holds, a chip that is not there. */
export function classifyGpioError(stderr: string): GpioFailure {
  if (/Device or resource busy|EBUSY/i.test(stderr)) return 'busy';
  if (
    /No such file or directory|No such device|error opening gpiochip|ENOENT|ENODEV/i.test(stderr)
  ) {
    return 'missing';
  }
  return 'other';
}

/**
 * `gpioinfo <chip>` (libgpiod 1.6):
 * ```
 * gpiochip1 - 4 lines:
 *         line   0: "atx-power-button" unused output active-high
 *         line   2: "atx-power-led" "gpiomon" input active-high [used]
 *         line   3:      unnamed       unused   input  active-high
 * ```
 */
export function parseGpioinfo(text: string): GpioChipInfo {
  const lines: GpioLineInfo[] = [];
  let name = '';
  for (const raw of text.split('\n')) {
    const head = /^(\S+) - \d+ lines:/.exec(raw);
    if (head) {
      name = head[1] as string;
      continue;
    }
    const m =
      /^\s*line\s+(\d+):\s+("(?:[^"]*)"|unnamed)\s+("(?:[^"]*)"|unused)\s+(input|output)\s+(active-high|active-low)(.*)$/.exec(
        raw,
      );
    if (!m) continue;
    const unquote = (s: string) => s.slice(1, -1);
    lines.push({
      offset: Number(m[1]),
      name: m[2] === 'unnamed' ? null : unquote(m[2] as string),
      consumer: m[3] === 'unused' ? null : unquote(m[3] as string),
      used: /\[[^\]]*used[^\]]*\]/.test(m[6] ?? '') || m[3] !== 'unused',
      direction: m[4] as 'input' | 'output',
      activeLow: m[5] === 'active-low',
    });
  }
  if (!name) throw new GpioToolError('other', `gpioinfo said no chip: ${text.slice(0, 200)}`);
  return { name, lines };
}

/** How a long-lived tool ended. */
export interface GpioExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Its last stderr (bounded). */
  stderr: string;
  /** stop() asked for it. */
  stopped: boolean;
}

/** A running `gpioset --mode=signal`/`--mode=time` or `gpiomon`. */
export interface GpioChild {
  readonly pid: number | null;
  /** Settles when the process is gone (never rejects). */
  readonly exited: Promise<GpioExit>;
  /** SIGTERM (the tools release their lines and exit), SIGKILL after 2 s. Idempotent. */
  stop(): Promise<GpioExit>;
}

export interface GpioEdge {
  offset: number;
  /** The physical level after the edge. */
  value: 0 | 1;
  /** The kernel's event time, ns (CLOCK_MONOTONIC in libgpiod 1.6). */
  ns: bigint;
}

/** What the ATX driver needs of the tools; its tests pass a fake chip. */
export interface GpioTools {
  info(chip: string): Promise<GpioChipInfo>;
  /** Physical levels of `offsets` (each requested as input for the read). */
  get(chip: string, offsets: readonly number[]): Promise<Array<0 | 1>>;
  /** Holds `offset` as an output at `value` until stopped. */
  hold(chip: string, offset: number, value: 0 | 1): GpioChild;
  /** Drives `offset` to `value` for `ms` (the tool's own sleep), then releases it. */
  pulse(chip: string, offset: number, value: 0 | 1, ms: number): GpioChild;
  /** Streams both edges of `offsets` until stopped. */
  monitor(chip: string, offsets: readonly number[], onEdge: (edge: GpioEdge) => void): GpioChild;
  /**
   * Calls `onGone` when the chip's device node (kernel name `gpiochip1`) is removed: an inotify
   * watch on its folder, no polling (a chip removed under gpioset and gpiomon does not end them).
   * Returns the unwatch.
   */
  watchGone(kernelName: string, onGone: () => void): () => void;
}

/** Every live tool child, killed on any exit of this process. */
const live = new Set<number>();
let hooked = false;
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const pid of live) signalGroup(pid, 'SIGKILL');
  });
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // gone already
    }
  }
}

const STDERR_KEEP = 2000;

/** The argv a tool child is spawned with: through setpriv when there is one. */
export function childArgv(
  tool: string,
  args: readonly string[],
  setpriv: string | null,
): [string, string[]] {
  return setpriv ? [setpriv, ['--pdeathsig', 'KILL', '--', tool, ...args]] : [tool, [...args]];
}

/** Spawns a long-lived tool (see the file's comment for how it never outlives the server). */
export function spawnTool(
  tool: string,
  args: readonly string[],
  onLine?: (line: string) => void,
  setpriv: string | null = findSetpriv(),
): GpioChild {
  hookExit();
  const [cmd, argv] = childArgv(tool, args, setpriv);
  let stderr = '';
  let stopped = false;
  let child: ChildProcess;
  let settle: (e: GpioExit) => void = () => undefined;
  const exited = new Promise<GpioExit>((resolve) => (settle = resolve));
  try {
    child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  } catch (err) {
    settle({ code: null, signal: null, stderr: (err as Error).message, stopped });
    return { pid: null, exited, stop: () => exited };
  }
  const pid = child.pid ?? null;
  if (pid !== null) live.add(pid);
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEEP);
  });
  if (onLine) {
    let rest = '';
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = (parts.pop() ?? '').slice(-4096);
      for (const line of parts) if (line) onLine(line);
    });
  } else child.stdout?.resume();
  child.once('error', (err) => {
    if (pid !== null) live.delete(pid);
    settle({ code: null, signal: null, stderr: `${stderr}${err.message}`, stopped });
  });
  child.once('close', (code, signal) => {
    if (pid !== null) live.delete(pid);
    settle({ code, signal, stderr: stderr.trim(), stopped });
  });
  let stopping: Promise<GpioExit> | null = null;
  const stop = (): Promise<GpioExit> => {
    if (stopping) return stopping;
    stopped = true;
    if (pid === null) return (stopping = exited);
    signalGroup(pid, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), 2000);
    stopping = exited.finally(() => clearTimeout(timer));
    return stopping;
  };
  return { pid, exited, stop };
}

/** libgpiod 1.6's tools from `dir` (Debian: /usr/bin). */
export class GpiodTools implements GpioTools {
  constructor(
    private readonly dir: string,
    private readonly run: CommandRunner = runCommand,
    /** Where the kernel makes the chips' nodes. */
    private readonly dev = '/dev',
  ) {}

  watchGone(kernelName: string, onGone: () => void): () => void {
    const node = join(this.dev, kernelName);
    let done = false;
    const check = () => {
      if (!done && !existsSync(node)) {
        done = true;
        onGone();
      }
    };
    let watcher: ReturnType<typeof watch> | null = null;
    try {
      watcher = watch(this.dev, { persistent: false }, (_event, file) => {
        if (file === null || file === kernelName) check();
      });
      watcher.on('error', () => undefined);
    } catch {
      // no inotify here: the tools' own failures still say it
    }
    check();
    return () => {
      done = true;
      watcher?.close();
    };
  }

  private tool(name: string): string {
    return join(this.dir, name);
  }

  private async oneShot(name: string, args: string[]): Promise<string> {
    try {
      return (await this.run(this.tool(name), args, { timeoutMs: 5000 })).stdout;
    } catch (err) {
      if (err instanceof CommandError) {
        const said = err.stderr.trim() || err.message;
        throw new GpioToolError(classifyGpioError(said), said);
      }
      throw err;
    }
  }

  async info(chip: string): Promise<GpioChipInfo> {
    return parseGpioinfo(await this.oneShot('gpioinfo', [chip]));
  }

  async get(chip: string, offsets: readonly number[]): Promise<Array<0 | 1>> {
    const out = await this.oneShot('gpioget', [chip, ...offsets.map(String)]);
    const values = out.trim().split(/\s+/).map(Number);
    if (values.length !== offsets.length || values.some((v) => v !== 0 && v !== 1)) {
      throw new GpioToolError('other', `gpioget said ${JSON.stringify(out.slice(0, 100))}`);
    }
    return values as Array<0 | 1>;
  }

  hold(chip: string, offset: number, value: 0 | 1): GpioChild {
    return spawnTool(this.tool('gpioset'), ['--mode=signal', chip, `${offset}=${value}`]);
  }

  pulse(chip: string, offset: number, value: 0 | 1, ms: number): GpioChild {
    const us = Math.round(ms * 1000);
    return spawnTool(this.tool('gpioset'), [
      '--mode=time',
      `--sec=${Math.floor(us / 1e6)}`,
      `--usec=${us % 1e6}`,
      chip,
      `${offset}=${value}`,
    ]);
  }

  monitor(chip: string, offsets: readonly number[], onEdge: (edge: GpioEdge) => void): GpioChild {
    return spawnTool(
      this.tool('gpiomon'),
      ['--line-buffered', '--format=%o %e %s %n', chip, ...offsets.map(String)],
      (line) => {
        const edge = parseEdge(line);
        if (edge) onEdge(edge);
      },
    );
  }
}

/** One line of `gpiomon --format='%o %e %s %n'`: offset, 1 rising / 0 falling, s, ns. */
export function parseEdge(line: string): GpioEdge | null {
  const m = /^(\d+) ([01]) (\d+) (\d+)$/.exec(line.trim());
  if (!m) return null;
  return {
    offset: Number(m[1]),
    value: m[2] === '1' ? 1 : 0,
    ns: BigInt(m[3] as string) * 1_000_000_000n + BigInt(m[4] as string),
  };
}
