/**
 * Wakes the long polls of `bind/poll` when their code is claimed, on any replica: the claim
 * NOTIFYs the claim token's hash on a PostgreSQL channel in its transaction (delivered at
 * commit), and each replica LISTENs on one connection of its own. The polls look at the table
 * again every 2 s anyway, so a lost notification (the connection dropped) only slows them.
 */
import pg from 'pg';
import type { Logger } from 'pino';

export class BindWaiters {
  private client: pg.Client | null = null;
  private readonly waiting = new Map<string, Set<() => void>>();
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  /** `channel`: the bind claims', or another's whose payload is the key waited for (jobs). */
  constructor(
    private readonly connectionString: string,
    private readonly log: Logger,
    readonly channel = 'fleet_bind_claimed',
  ) {}

  /** Connects and LISTENs; throws when PostgreSQL cannot be reached (the replica's start fails). */
  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString });
    this.client = client;
    client.on('notification', (n) => {
      if (n.channel !== this.channel || !n.payload) return;
      for (const wake of this.waiting.get(n.payload) ?? []) wake();
    });
    // only the current client's loss counts (an old one's late 'end' must not start a second)
    client.on('error', (err) => {
      if (this.client !== client) return;
      this.log.warn({ err: err.message }, 'bind notifications lost; reconnecting');
      this.reconnect();
    });
    client.on('end', () => {
      if (this.client === client) this.reconnect();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
    } catch (e) {
      if (this.client === client) this.reconnect();
      throw e;
    }
  }

  private reconnect(): void {
    const old = this.client;
    this.client = null;
    old?.removeAllListeners();
    old?.on('error', () => {});
    old?.end().catch(() => {});
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      if (!this.closed) this.start().catch(() => {});
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
