/**
 * Sessions: 64-hex tokens handed to the client, kept here only as SHA-256 hashes. Expiry
 * slides with use. Persisted to the data folder so a restart (or an upgrade) does not log the
 * administrator out; sliding updates are flushed lazily, creations and removals at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { JsonFile } from '../../storage/json-store';

export interface Session {
  hash: string;
  user: string;
  createdAt: number;
  expiresAt: number;
  /** Sliding lifetime in ms. */
  lifetimeMs: number;
}

export function newToken(): string {
  return randomBytes(32).toString('hex');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Slide at most this often per session, so a busy client does not write on every request. */
const FLUSH_DELAY_MS = 30_000;

export class SessionStore extends EventEmitter<{ ended: [hash: string, reason: string] }> {
  private readonly sessions = new Map<string, Session>();
  private flushTimer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly file: JsonFile<Session[]>,
    private readonly now: () => number,
  ) {
    super();
  }

  static async open(path: string, now: () => number = Date.now): Promise<SessionStore> {
    const file = new JsonFile<Session[]>(path, (raw) =>
      Array.isArray(raw) ? (raw.filter(isSession) as Session[]) : [],
    );
    let list: Session[] = [];
    try {
      list = await file.load();
    } catch {
      // A corrupt sessions file only costs a login; it is rewritten on the next save.
    }
    const store = new SessionStore(file, now);
    const t = now();
    for (const s of list) if (s.expiresAt > t) store.sessions.set(s.hash, s);
    return store;
  }

  async create(user: string, lifetimeMs: number): Promise<string> {
    const token = newToken();
    const t = this.now();
    this.sessions.set(hashToken(token), {
      hash: hashToken(token),
      user,
      createdAt: t,
      expiresAt: t + lifetimeMs,
      lifetimeMs,
    });
    await this.persist();
    return token;
  }

  /** The live session of a token, slid forward; null when unknown or expired. */
  touch(token: string): Session | null {
    const hash = hashToken(token);
    const session = this.sessions.get(hash);
    if (!session) return null;
    const t = this.now();
    if (session.expiresAt <= t) {
      this.sessions.delete(hash);
      this.emit('ended', hash, 'expired');
      this.scheduleFlush();
      return null;
    }
    session.expiresAt = t + session.lifetimeMs;
    this.scheduleFlush();
    return session;
  }

  async remove(token: string, reason = 'logout'): Promise<boolean> {
    const hash = hashToken(token);
    if (!this.sessions.delete(hash)) return false;
    this.emit('ended', hash, reason);
    await this.persist();
    return true;
  }

  /** Ends every session of `user` except the one of `keepToken`. */
  async removeAllOf(user: string, keepToken: string | null, reason: string): Promise<void> {
    const keep = keepToken ? hashToken(keepToken) : null;
    for (const [hash, s] of this.sessions) {
      if (s.user === user && hash !== keep) {
        this.sessions.delete(hash);
        this.emit('ended', hash, reason);
      }
    }
    await this.persist();
  }

  get size(): number {
    return this.sessions.size;
  }

  private scheduleFlush(): void {
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      void this.persist().catch(() => undefined);
    }, FLUSH_DELAY_MS);
    this.flushTimer.unref();
  }

  async persist(): Promise<void> {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    const t = this.now();
    for (const [hash, s] of this.sessions) if (s.expiresAt <= t) this.sessions.delete(hash);
    await this.file.save([...this.sessions.values()]);
  }
}

function isSession(v: unknown): boolean {
  const s = v as Session;
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.hash === 'string' &&
    /^[0-9a-f]{64}$/.test(s.hash) &&
    typeof s.user === 'string' &&
    typeof s.expiresAt === 'number' &&
    typeof s.lifetimeMs === 'number' &&
    typeof s.createdAt === 'number'
  );
}
