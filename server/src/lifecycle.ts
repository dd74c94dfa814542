/**
 * The one shutdown path: every service and driver that holds something (a process, a timer, a
 * file, a socket) registers its stop here as it is made, and the app's close runs them all, in
 * the reverse order of registration (what was made last, and may use what came before it,
 * stops first). One failing stop is logged and does not keep the others from running.
 */
import type { Logger } from './log';

interface Entry {
  name: string;
  stop: () => unknown;
}

export class Lifecycle {
  private readonly entries: Entry[] = [];
  private stopping: Promise<void> | null = null;

  constructor(private readonly log: Logger) {}

  /** Registers `stop` under `name` (for the log); returns the registered function. */
  onStop(name: string, stop: () => unknown): void {
    if (this.stopping) throw new Error(`lifecycle: ${name} registered while stopping`);
    this.entries.push({ name, stop });
  }

  /** The names in the order they will stop (tests, docs). */
  order(): string[] {
    return this.entries.map((e) => e.name).reverse();
  }

  /** Runs every stop once, last registered first; a second call waits for the first. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const entry of [...this.entries].reverse()) {
        try {
          await entry.stop();
        } catch (err) {
          this.log.error({ err: (err as Error).message, part: entry.name }, 'stop failed');
        }
      }
    })();
    return this.stopping;
  }
}
