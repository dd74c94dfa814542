/**
 * `nmcli device monitor <iface>` kept running while someone listens: every line it prints is a
 * state change of that device, turned into one (debounced) `onChange` call. Restarted after a
 * pause when it exits (NetworkManager restarted); stopped with the last listener or dispose.
 */
import { spawn } from 'node:child_process';
import type { Logger } from '../../log';

/** Starts watching; `onLine` per output line; returns stop. Injected in tests. */
export type MonitorSpawner = (args: readonly string[], onLine: () => void) => () => void;

const RESTART_MS = 5000;

export const spawnMonitor =
  (log?: Logger): MonitorSpawner =>
  (args, onLine) => {
    let stopped = false;
    let timer: NodeJS.Timeout | null = null;
    let child: ReturnType<typeof spawn> | null = null;
    const start = (): void => {
      if (stopped) return;
      child = spawn('nmcli', [...args], {
        stdio: ['ignore', 'pipe', 'ignore'],
        env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
      });
      child.stdout?.on('data', () => onLine());
      child.on('error', (err) => log?.debug({ err: err.message }, 'nmcli monitor failed'));
      child.on('exit', () => {
        child = null;
        if (!stopped) timer = setTimeout(start, RESTART_MS);
      });
    };
    start();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      child?.kill('SIGTERM');
    };
  };

/** Listeners of one device, with the monitor running only while there are some. */
export class DeviceWatch {
  private readonly listeners = new Set<() => void>();
  private stop: (() => void) | null = null;
  private debounce: NodeJS.Timeout | null = null;

  constructor(
    private readonly spawner: MonitorSpawner | null,
    private readonly args: () => readonly string[] | null,
  ) {}

  add(listener: () => void): () => void {
    this.listeners.add(listener);
    if (!this.stop && this.spawner) {
      const args = this.args();
      if (args) this.stop = this.spawner(args, () => this.changedSoon());
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.close();
    };
  }

  /** Tells the listeners now (after our own changes). */
  changed(): void {
    for (const l of [...this.listeners]) {
      try {
        l();
      } catch {
        // a listener's failure is its own
      }
    }
  }

  private changedSoon(): void {
    if (this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = null;
      this.changed();
    }, 200);
  }

  close(): void {
    this.stop?.();
    this.stop = null;
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = null;
  }
}
