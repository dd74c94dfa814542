/**
 * The console sessions of fleet users (docs/cloud.md): a request through the fleet runs under
 * a session of `cloud:<fleet user>` made through the AuthService's session store, one per fleet
 * user, reused while it lives, all ended when the binding goes. Making one is what the device
 * log records as "console opened through the cloud by <user>".
 */
import type { Logger } from '../../log';
import type { SessionStore } from '../auth/sessions';

/** The session user of a fleet user. */
export function cloudUser(name: string): string {
  return `cloud:${name}`;
}

export class CloudSessions {
  private readonly tokens = new Map<string, string>();
  private readonly making = new Map<string, Promise<string>>();

  constructor(
    private readonly sessions: SessionStore,
    private readonly lifetimeMs: number,
    private readonly log: Logger,
  ) {}

  /** The live session token of `name` (a fleet user name), made when none lives. */
  tokenFor(name: string): Promise<string> {
    const kept = this.tokens.get(name);
    if (kept !== undefined && this.sessions.touch(kept) !== null) return Promise.resolve(kept);
    let running = this.making.get(name);
    if (!running) {
      running = this.sessions.create(cloudUser(name), this.lifetimeMs).then((token) => {
        this.tokens.set(name, token);
        this.log.info({ user: cloudUser(name) }, `console opened through the cloud by ${name}`);
        return token;
      });
      const done = (): void => {
        this.making.delete(name);
      };
      running.then(done, done);
      this.making.set(name, running);
    }
    return running;
  }

  get users(): string[] {
    return [...this.tokens.keys()];
  }

  /** Ends every fleet user's session (the binding went). */
  async endAll(reason = 'cloud_unbound'): Promise<void> {
    const tokens = [...this.tokens.values()];
    this.tokens.clear();
    for (const token of tokens) await this.sessions.remove(token, reason).catch(() => false);
  }
}
