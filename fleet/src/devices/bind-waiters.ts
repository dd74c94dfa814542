/**
 * Wakes the long polls of `bind/poll` when their code is claimed, on any replica: the claim
 * NOTIFYs the claim token's hash on a PostgreSQL channel in its transaction (delivered at
 * commit), and each replica LISTENs on one connection of its own. The polls look at the table
 * again every 2 s anyway, so a lost notification (the connection dropped) only slows them.
 */
import pg from 'pg';
import type { Logger } from 'pino';

export class BindWaiters {
  readonly channel = 'fleet_bind_claimed';
  private client: pg.Client | null = null;
  private readonly waiting = new Map<string, Set<() => void>>();
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly connectionString: string,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on('notification', (n) => {
      if (n.channel !== this.channel || !n.payload) return;
      for (const wake of this.waiting.get(n.payload) ?? []) wake();
    });
    client.on('error', (err) => {
      this.log.warn({ err: err.message }, 'bind notifications lost; reconnecting');
      this.reconnect();
    });
    client.on('end', () => this.reconnect());
    await client.connect();
    await client.query(`LISTEN ${this.channel}`);
    this.client = client;
  }

  private reconnect(): void {
    if (this.closed || this.retry) return;
    const old = this.client;
    this.client = null;
    old?.removeAllListeners();
    old?.end().catch(() => {});
    this.retry = setTimeout(() => {
      this.retry = null;
      this.start().catch(() => this.reconnect());
    }, 1000);
    this.retry.unref();
  }

  /** Resolves when `key` is notified, after `ms`, or when `signal` aborts, whichever is first. */
  wait(key: string, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let set = this.waiting.get(key);
      if (!set) {
        set = new Set();
        this.waiting.set(key, set);
      }
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        set.delete(done);
        if (set.size === 0) this.waiting.delete(key);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      set.add(done);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const c = this.client;
    this.client = null;
    c?.removeAllListeners();
    c?.on('error', () => {});
    await c?.end().catch(() => {});
  }
}
