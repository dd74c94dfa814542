/**
 * Sessions: 64-hex tokens handed to the client, kept here only as SHA-256 hashes. Expiry
 * slides with use. Persisted to the data folder so a restart (or an upgrade) does not log the
 * administrator out; sliding updates are flushed lazily, creations and removals at once.
 *
 * The file: missing means no sessions; unreadable JSON is moved aside (`sessions.json.corrupt-
 * <time>`) with a warning and the server starts with none (a session costs only a login); any
 * other read error (EACCES, EIO) stops the start, because the same fault would fail every login
 * and hide a broken data folder behind "wrong password". A session whose creation cannot be
 * saved is taken back and the login fails, rather than hand out a token a restart forgets.
 */
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { SILENT_LOGGER, type Logger } from '../../log';
import { InsufficientStorageError, InternalError } from '../../errors';
import { CorruptFileError, JsonFile } from '../../storage/json-store';

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
/** Sessions one user may hold; a new login past it ends the one used longest ago ('evicted'). */
export const MAX_SESSIONS_PER_USER = 64;
/** Sessions kept in all (and so in the file, about 250 bytes each). */
export const MAX_SESSIONS = 256;
/** How often expired sessions are ended without waiting for their token's next use. */
export const SESSION_SWEEP_MS = 30_000;

export interface SessionStoreOptions {
  now?: () => number;
  log?: Logger;
}

/** When the session was last used: its expiry slides to `use + lifetime` on every use. */
function lastUse(s: Session): number {
  return s.expiresAt - s.lifetimeMs;
}

export class SessionStore extends EventEmitter<{ ended: [hash: string, reason: string] }> {
  private readonly sessions = new Map<string, Session>();
  private flushTimer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly file: JsonFile<Session[]>,
    private readonly now: () => number,
    private readonly log: Logger,
  ) {
    super();
  }

  static async open(path: string, opts: SessionStoreOptions = {}): Promise<SessionStore> {
    const now = opts.now ?? Date.now;
    const log = opts.log ?? SILENT_LOGGER;
    const file = new JsonFile<Session[]>(path, parseSessions, {
      asideName: (p) => `${p}.corrupt-${Date.now()}`,
    });
    const list = await readSessions(file, log);
    const store = new SessionStore(file, now, log);
    const t = now();
    const live = list.filter((s) => s.expiresAt > t).sort((a, b) => lastUse(a) - lastUse(b));
    for (const s of live.slice(-MAX_SESSIONS)) store.sessions.set(s.hash, s);
    return store;
  }

  /**
   * A new session of `user`. Past the caps the session used longest ago ends ('evicted', its
   * sockets close). When the file cannot be written the session is taken back and the error
   * goes to the caller (the login fails; ENOSPC answers 507).
   */
  async create(user: string, lifetimeMs: number): Promise<string> {
    const token = newToken();
    const hash = hashToken(token);
    const t = this.now();
    this.evictFor(user);
    this.sessions.set(hash, { hash, user, createdAt: t, expiresAt: t + lifetimeMs, lifetimeMs });
    try {
      await this.persist();
    } catch (err) {
      this.sessions.delete(hash);
      this.log.error({ err, path: this.file.path }, 'session not saved; the login is refused');
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOSPC' || code === 'EDQUOT') {
        throw new InsufficientStorageError(
          "The device's storage is full: the session could not be saved",
        );
      }
      throw new InternalError('The session could not be saved');
    }
    return token;
  }

  private evictFor(user: string): void {
    const mine = [...this.sessions.values()].filter((s) => s.user === user);
    const victims: Session[] = [];
    if (mine.length >= MAX_SESSIONS_PER_USER) {
      victims.push(
        ...mine
          .sort((a, b) => lastUse(a) - lastUse(b))
          .slice(0, mine.length - MAX_SESSIONS_PER_USER + 1),
      );
    }
    const rest = this.sessions.size - victims.length;
    if (rest >= MAX_SESSIONS) {
      const chosen = new Set(victims);
      victims.push(
        ...[...this.sessions.values()]
          .filter((s) => !chosen.has(s))
          .sort((a, b) => lastUse(a) - lastUse(b))
          .slice(0, rest - MAX_SESSIONS + 1),
      );
    }
    for (const v of victims) {
      this.sessions.delete(v.hash);
      this.emit('ended', v.hash, 'evicted');
    }
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

  /**
   * Ends every session past its expiry now ('expired': its sockets close with 4001). Sessions
   * expire lazily, when their token is next used; a socket that does not use it (an idle
   * terminal) would outlive its session without this sweep (app.ts, every `SESSION_SWEEP_MS`).
   */
  expireDue(): void {
    const t = this.now();
    let any = false;
    for (const [hash, s] of this.sessions) {
      if (s.expiresAt > t) continue;
      this.sessions.delete(hash);
      this.emit('ended', hash, 'expired');
      any = true;
    }
    if (any) this.scheduleFlush();
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
      this.persist().catch((err: unknown) => {
        // Only the slid expiry times are lost; the next save writes them again.
        this.log.error({ err, path: this.file.path }, 'sessions not saved');
      });
    }, FLUSH_DELAY_MS);
    this.flushTimer.unref();
  }

  async persist(): Promise<void> {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    const t = this.now();
    for (const [hash, s] of this.sessions) {
      if (s.expiresAt <= t) {
        this.sessions.delete(hash);
        this.emit('ended', hash, 'expired');
      }
    }
    await this.file.save([...this.sessions.values()]);
  }
}

/** Missing: none; not a list: corrupt (CorruptFileError); a list: the entries that are sessions. */
function parseSessions(raw: unknown): Session[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw new Error('not a list');
  return raw.filter(isSession) as Session[];
}

async function readSessions(file: JsonFile<Session[]>, log: Logger): Promise<Session[]> {
  const path = file.path;
  try {
    return await file.load();
  } catch (err) {
    if (!(err instanceof CorruptFileError)) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new Error(`${path}: cannot be read (${code ?? String(err)}); fix the data folder`, {
        cause: err,
      });
    }
    try {
      const aside = await file.setAside();
      log.warn({ path, aside, err: err.reason }, 'sessions file unreadable; moved aside');
    } catch (renameErr) {
      log.warn({ path, err: (renameErr as Error).message }, 'sessions file unreadable');
    }
    return [];
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
