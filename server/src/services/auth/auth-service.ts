/**
 * The one admin account: first-run password, login with optional TOTP, sessions, remembered
 * devices and the login rate limit. Routes call this; it owns `auth.json` and `sessions.json`.
 *
 * Every check of a secret (password, 2FA code) goes the same way: the attempt is counted by
 * the rate limiter first (synchronously, so a burst cannot pass the lock check together), the
 * password hash then waits for a slot of the hash gate (bounded per address and overall), and
 * only a success takes the attempt back. A TOTP code is accepted once: the step it belongs to
 * is remembered, and that step and every earlier one are refused afterwards (RFC 6238 5.2).
 * The remembered step lives in memory, not in auth.json: header-credential clients present a
 * new code every 30 s and would rewrite the file as often, and a replay across a restart needs
 * the password too and a restart inside the code's 90 s of validity.
 */
import { join } from 'node:path';
import { EventEmitter } from 'node:events';
import { ADMIN_USER, isValidAdminPassword } from '@kvm/protocol';
import { ForbiddenError, RateLimitError, ValidatorError } from '../../errors';
import { SILENT_LOGGER, type Logger } from '../../log';
import { JsonFile } from '../../storage/json-store';
import { CredentialCache } from './credential-cache';
import { HASH_GATE_DEFAULTS, HashGate, type HashGateOptions } from './hash-gate';
import { hashPassword, verifyPassword } from './passwords';
import {
  addressKey,
  LoginRateLimiter,
  type FailOutcome,
  type RateLimitOptions,
} from './rate-limit';
import { hashToken, newToken, SessionStore, type Session } from './sessions';
import { base32Decode, matchTotpStep, newTotpSecret, totpUri } from './totp';

interface TrustedDevice {
  hash: string;
  expiresAt: number;
}

interface AuthState {
  version: 1;
  password_hash: string | null;
  totp_secret: string | null;
  trusted: TrustedDevice[];
}

const EMPTY: AuthState = { version: 1, password_hash: null, totp_secret: null, trusted: [] };
export const TOTP_ISSUER = 'KVM';
/** kvmd's user name syntax (wire-protocol.md 1.2), at most 32 characters like Linux's. */
const USER_RE = /^[a-z_][a-z0-9_-]{0,31}$/;
/** Remembered devices kept; the oldest is forgotten first. */
export const MAX_TRUSTED_DEVICES = 32;
/** A hash verified against when the password is unset, so timing does not tell. */
const DUMMY_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA==$' + 'A'.repeat(86) + '==';

function parseState(raw: unknown): AuthState {
  if (typeof raw !== 'object' || raw === null) return { ...EMPTY, trusted: [] };
  const r = raw as Partial<AuthState>;
  return {
    version: 1,
    password_hash: typeof r.password_hash === 'string' ? r.password_hash : null,
    totp_secret: typeof r.totp_secret === 'string' ? r.totp_secret : null,
    trusted: Array.isArray(r.trusted)
      ? r.trusted
          .filter((t) => typeof t?.hash === 'string' && typeof t.expiresAt === 'number')
          .slice(-MAX_TRUSTED_DEVICES)
      : [],
  };
}

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, stored: string): Promise<boolean>;
}

export interface AuthOptions {
  sessionExpireS: number;
  rateLimit: RateLimitOptions;
  trustedDeviceDays: number;
  now?: () => number;
  log?: Logger;
  /** The password hash; tests count or hold the verifications through it. */
  passwords?: PasswordHasher;
  hashGate?: HashGateOptions;
}

/** Which check refused a login, for the log (never for the client, who only learns 403). */
export type FailedFactor = 'user' | 'password' | '2fa' | '2fa_reused' | 'busy';

export interface LoginFailure {
  user: string;
  ip: string;
  factor: FailedFactor;
  /** Seconds the address is now locked for (0: not locked). */
  lockedS: number;
  /** This failure started the lock. */
  lockStarted: boolean;
}

export interface LoginArgs {
  user: string;
  passwd: string;
  /** A separate 2FA code (login_with_2fa); without it the code is the last 6 chars of passwd. */
  code?: string;
  /** Session lifetime asked for, seconds; 0 = the server's maximum. */
  expireS: number;
  /** The remember-this-device token the browser sent, if any. */
  trustedToken?: string;
  ip: string;
  /** Check only (X-KVMD headers): count failures, create no session, return ''. */
  dryRun?: boolean;
  /** Told about each refused attempt, to log it. */
  onFailure?: (failure: LoginFailure) => void;
}

/** Who asks, for the limiter and the log of checks outside login (2FA verify, password change). */
export interface Asker {
  ip: string;
  user?: string;
  onFailure?: (failure: LoginFailure) => void;
}

type Verdict = { ok: true } | { ok: false; factor: FailedFactor };

export class AuthService extends EventEmitter<{
  changed: [];
  /** The password or the 2FA secret changed: header credentials checked before no longer hold. */
  credentialsChanged: [];
}> {
  private readonly limiter: LoginRateLimiter;
  private readonly gate: HashGate;
  private readonly now: () => number;
  private readonly passwords: PasswordHasher;
  private readonly log: Logger;
  private readonly headerCache: CredentialCache;
  private readonly headerChecks = new Map<string, Promise<void>>();
  /** Bumped on every change of auth.json; a check that started before it is not cached. */
  private headerCacheGeneration = 0;
  /** The newest TOTP step accepted for the current secret (see the file comment). */
  private usedTotpStep = Number.NEGATIVE_INFINITY;
  /** Set while a first-run init is hashing, so a second concurrent one is refused. */
  private initializing = false;
  private mutations: Promise<unknown> = Promise.resolve();

  private constructor(
    private state: AuthState,
    private readonly file: JsonFile<AuthState>,
    readonly sessions: SessionStore,
    private readonly opts: AuthOptions,
  ) {
    super();
    this.now = opts.now ?? Date.now;
    this.log = opts.log ?? SILENT_LOGGER;
    this.limiter = new LoginRateLimiter(opts.rateLimit, this.now);
    this.gate = new HashGate(opts.hashGate ?? HASH_GATE_DEFAULTS);
    this.passwords = opts.passwords ?? { hash: hashPassword, verify: verifyPassword };
    this.headerCache = new CredentialCache(this.now);
  }

  static async open(dataDir: string, opts: AuthOptions): Promise<AuthService> {
    const file = new JsonFile<AuthState>(join(dataDir, 'auth.json'), parseState);
    const state = await file.load();
    const sessions = await SessionStore.open(join(dataDir, 'sessions.json'), {
      now: opts.now,
      log: opts.log,
    });
    return new AuthService(state, file, sessions, opts);
  }

  isInited(): boolean {
    return this.state.password_hash !== null;
  }

  isTwoFaEnabled(): boolean {
    return this.state.totp_secret !== null;
  }

  /** Hashes running and waiting (tests, bench). */
  get hashStats(): { running: number; waiting: number } {
    return this.gate.stats;
  }

  /**
   * First run only: never resets an initialised device. Of concurrent calls exactly one wins:
   * the first claims the init synchronously, before its hash, and the others get 403.
   */
  async init(password: string, ip = 'local'): Promise<void> {
    if (this.isInited() || this.initializing)
      throw new ForbiddenError('The device is already initialized');
    if (!isValidAdminPassword(password)) {
      throw new ValidatorError(
        "The argument 'password' is not a valid password (5 to 63 printable characters)",
      );
    }
    this.initializing = true;
    try {
      const hash = await this.gate.run(addressKey(ip), () => this.passwords.hash(password));
      await this.mutate((s) => {
        if (s.password_hash !== null) throw new ForbiddenError('The device is already initialized');
        return { ...s, password_hash: hash };
      });
    } finally {
      this.initializing = false;
    }
  }

  checkUserSyntax(user: string): void {
    if (!USER_RE.test(user)) {
      const shown = user.length > 32 ? `${user.slice(0, 32)}...` : user;
      throw new ValidatorError(
        `The argument 'user' (${JSON.stringify(shown)}) is not a valid username characters`,
      );
    }
  }

  /**
   * Checks a password (+ TOTP when on). Runs under the caller's limiter attempt and hash slot;
   * an accepted code's step is taken synchronously with its check, so two requests with the
   * same code cannot both pass.
   */
  private async check(
    user: string,
    passwd: string,
    code: string | undefined,
    trustedToken: string | undefined,
  ): Promise<Verdict> {
    const hash = this.state.password_hash;
    const secret = this.state.totp_secret;
    let password = passwd;
    let totpCode = code;
    const trusted = trustedToken !== undefined && this.isTrusted(trustedToken);
    if (secret && totpCode === undefined && !trusted) {
      totpCode = passwd.slice(-6);
      password = passwd.slice(0, -6);
    }
    const passwordOk = await this.passwords.verify(password, hash ?? DUMMY_HASH);
    if (user !== ADMIN_USER) return { ok: false, factor: 'user' };
    // The state may have changed while hashing (password change, 2FA off): judge by the new one.
    if (!hash || !passwordOk || this.state.password_hash !== hash)
      return { ok: false, factor: 'password' };
    if (this.state.totp_secret !== secret) return { ok: false, factor: '2fa' };
    if (!secret || (trusted && code === undefined)) return { ok: true };
    return this.takeTotp(secret, totpCode ?? '');
  }

  private takeTotp(secret: string, code: string): Verdict {
    const step = matchTotpStep(secret, code, this.now());
    if (step === null) return { ok: false, factor: '2fa' };
    if (step <= this.usedTotpStep) return { ok: false, factor: '2fa_reused' };
    this.usedTotpStep = step;
    return { ok: true };
  }

  /**
   * Counts an attempt, runs `check` in a hash slot, settles the attempt. Throws 429 while
   * locked (and when this failure locks), 403 on a wrong secret, 429/503 when the hash gate
   * is full.
   */
  private async guarded(
    asker: Asker & { user: string },
    hashes: boolean,
    check: () => Promise<Verdict> | Verdict,
    refusal: () => ForbiddenError,
  ): Promise<void> {
    const attempt = this.limiter.reserve(asker.ip);
    let verdict: Verdict;
    try {
      verdict = hashes ? await this.gate.run(attempt.key, async () => check()) : await check();
    } catch (err) {
      this.refuse(asker, 'busy', this.limiter.abandon(attempt));
      throw err;
    }
    if (verdict.ok) {
      this.limiter.succeed(attempt);
      return;
    }
    const outcome = this.limiter.fail(attempt);
    this.refuse(asker, verdict.factor, outcome);
    if (outcome.lockedS > 0) throw new RateLimitError(outcome.lockedS);
    throw refusal();
  }

  private refuse(
    asker: Asker & { user: string },
    factor: FailedFactor,
    outcome: FailOutcome,
  ): void {
    asker.onFailure?.({
      user: asker.user,
      ip: asker.ip,
      factor,
      lockedS: outcome.lockedS,
      lockStarted: outcome.lockStarted,
    });
  }

  /** Login: returns a new session token or throws 403 / 429 / 503. */
  async login(args: LoginArgs): Promise<string> {
    this.checkUserSyntax(args.user);
    await this.guarded(
      { ip: args.ip, user: args.user, onFailure: args.onFailure },
      true,
      () => this.check(args.user, args.passwd, args.code, args.trustedToken),
      () => new ForbiddenError('Invalid username or password'),
    );
    if (args.dryRun) return '';
    const max = this.opts.sessionExpireS;
    const lifetimeS = args.expireS > 0 ? Math.min(args.expireS, max) : max;
    return this.sessions.create(args.user, lifetimeS * 1000);
  }

  /**
   * X-KVMD-User / X-KVMD-Passwd on a request. A credential that verified is taken on trust for
   * a minute (credential-cache.ts); identical checks running at once share one hash, so a
   * kvmd client's parallel requests neither queue up nor trip the TOTP reuse check. Failures
   * go through the limiter and the hash gate like the login form's.
   */
  async verifyHeaderCredentials(
    args: Omit<LoginArgs, 'expireS' | 'dryRun' | 'code'>,
  ): Promise<void> {
    this.checkUserSyntax(args.user);
    const trusted = args.trustedToken !== undefined && this.isTrusted(args.trustedToken);
    const digest = this.headerCache.digest([
      args.user,
      args.passwd,
      trusted ? (args.trustedToken ?? '') : '',
    ]);
    if (this.headerCache.has(digest)) return;
    let running = this.headerChecks.get(digest);
    if (!running) {
      const generation = this.headerCacheGeneration;
      running = this.login({ ...args, expireS: 0, dryRun: true }).then(() => {
        // A password or 2FA change while hashing must not re-admit the old credential.
        if (generation === this.headerCacheGeneration) this.headerCache.add(digest);
      });
      const done = (): void => {
        this.headerChecks.delete(digest);
      };
      running.then(done, done);
      this.headerChecks.set(digest, running);
    }
    await running;
  }

  /** The session of a token, slid forward, or null. */
  session(token: string): Session | null {
    return this.sessions.touch(token);
  }

  async logout(token: string): Promise<void> {
    await this.sessions.remove(token, 'logout');
  }

  /** Ends every session of `user` (PiKVM's logout, config `auth.logout_scope: user`). */
  async logoutUser(user: string): Promise<void> {
    await this.sessions.removeAllOf(user, null, 'logout');
  }

  /** Needs the old password, counted by the login limiter (old-password guessing). */
  async changePassword(
    user: string,
    oldPassword: string,
    newPassword: string,
    keepToken: string | null,
    asker: Asker = { ip: 'local' },
  ): Promise<void> {
    this.checkUserSyntax(user);
    if (!isValidAdminPassword(newPassword)) {
      throw new ValidatorError(
        "The argument 'new_password' is not a valid password (5 to 63 printable characters)",
      );
    }
    const before = this.state.password_hash;
    await this.guarded(
      { ...asker, user },
      true,
      async () => {
        const ok = await this.passwords.verify(oldPassword, before ?? DUMMY_HASH);
        if (user !== ADMIN_USER) return { ok: false, factor: 'user' };
        return ok && before !== null ? { ok: true } : { ok: false, factor: 'password' };
      },
      () => new ForbiddenError('The old password is not correct'),
    );
    const hash = await this.gate.run(addressKey(asker.ip), () => this.passwords.hash(newPassword));
    await this.mutate((s) => {
      if (s.password_hash !== before) throw new ForbiddenError('The password changed meanwhile');
      return { ...s, password_hash: hash, trusted: [] };
    });
    await this.sessions.removeAllOf(user, keepToken, 'password_changed');
  }

  // --- two-factor ---------------------------------------------------------------------------

  createTwoFa(): { secret: string; uri: string } {
    if (this.isTwoFaEnabled()) throw new ForbiddenError('2FA is already enabled');
    const secret = newTotpSecret();
    return { secret, uri: totpUri(secret, TOTP_ISSUER, ADMIN_USER) };
  }

  /** Turns 2FA on with a code of the new secret; that code's step then counts as used. */
  async enableTwoFa(secret: string, key: string): Promise<void> {
    if (this.isTwoFaEnabled()) throw new ForbiddenError('2FA is already enabled');
    const decoded = base32Decode(secret);
    if (!decoded || decoded.length < 10)
      throw new ValidatorError("The argument 'secret' is not a valid base32 secret");
    const step = matchTotpStep(secret, key, this.now());
    if (step === null) throw new ForbiddenError('Invalid 2FA code');
    await this.mutate((s) => {
      if (s.totp_secret !== null) throw new ForbiddenError('2FA is already enabled');
      return { ...s, totp_secret: secret.replace(/[\s=]/g, '').toUpperCase(), trusted: [] };
    });
    this.usedTotpStep = step;
  }

  showTwoFa(): string | null {
    const secret = this.state.totp_secret;
    return secret ? totpUri(secret, TOTP_ISSUER, ADMIN_USER) : null;
  }

  /** Checks a code (counted by the limiter; a code is accepted once). Throws 403 / 429. */
  async verifyTwoFa(code: string, asker: Asker): Promise<void> {
    await this.guarded(
      { ...asker, user: asker.user ?? ADMIN_USER },
      false,
      () => {
        const secret = this.state.totp_secret;
        return secret ? this.takeTotp(secret, code) : { ok: false, factor: '2fa' };
      },
      () => new ForbiddenError('Invalid 2FA code'),
    );
  }

  /** Turns 2FA off; needs a current code, checked like `verifyTwoFa`. */
  async disableTwoFa(code: string, asker: Asker): Promise<void> {
    if (!this.isTwoFaEnabled()) throw new ForbiddenError('2FA is not enabled');
    const secret = this.state.totp_secret;
    await this.verifyTwoFa(code, asker);
    await this.mutate((s) => {
      if (s.totp_secret !== secret) throw new ForbiddenError('2FA changed meanwhile');
      return { ...s, totp_secret: null, trusted: [] };
    });
    this.usedTotpStep = Number.NEGATIVE_INFINITY;
  }

  // --- remembered devices -------------------------------------------------------------------

  async trustDevice(): Promise<{ token: string; maxAgeS: number }> {
    const token = newToken();
    const maxAgeS = this.opts.trustedDeviceDays * 86_400;
    await this.mutate((s) => {
      const t = this.now();
      const trusted = s.trusted.filter((d) => d.expiresAt > t).slice(-(MAX_TRUSTED_DEVICES - 1));
      trusted.push({ hash: hashToken(token), expiresAt: t + maxAgeS * 1000 });
      return { ...s, trusted };
    });
    return { token, maxAgeS };
  }

  isTrusted(token: string): boolean {
    if (!this.isTwoFaEnabled() || !/^[0-9a-f]{64}$/.test(token)) return false;
    const hash = hashToken(token);
    const t = this.now();
    return this.state.trusted.some((d) => d.hash === hash && d.expiresAt > t);
  }

  /**
   * Applies one change to auth.json, one at a time: each change sees the one before it, so a
   * remembered device added during a password change cannot bring back the old list. The
   * state changes only once the file is written.
   */
  private mutate(fn: (state: AuthState) => AuthState): Promise<void> {
    const run = this.mutations.then(async () => {
      const prev = this.state;
      const next = fn(prev);
      await this.file.save(next);
      this.state = next;
      this.headerCache.clear();
      this.headerCacheGeneration += 1;
      this.emit('changed');
      if (prev.password_hash !== next.password_hash || prev.totp_secret !== next.totp_secret)
        this.emit('credentialsChanged');
    });
    this.mutations = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    await this.sessions.persist();
  }
}
