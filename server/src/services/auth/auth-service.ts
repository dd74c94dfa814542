/**
 * The one admin account: first-run password, login with optional TOTP, sessions, remembered
 * devices and the login rate limit. Routes call this; it owns `auth.json` and `sessions.json`.
 */
import { join } from 'node:path';
import { EventEmitter } from 'node:events';
import { ADMIN_USER, isValidAdminPassword } from '@kvm/protocol';
import { ForbiddenError, RateLimitError, ValidatorError } from '../../errors';
import { JsonFile } from '../../storage/json-store';
import { hashPassword, verifyPassword } from './passwords';
import { LoginRateLimiter, type RateLimitOptions } from './rate-limit';
import { hashToken, newToken, SessionStore, type Session } from './sessions';
import { base32Decode, newTotpSecret, totpUri, verifyTotp } from './totp';

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
/** kvmd's user name syntax (wire-protocol.md 1.2). */
const USER_RE = /^[a-z_][a-z0-9_-]*$/;
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
      ? r.trusted.filter((t) => typeof t?.hash === 'string' && typeof t.expiresAt === 'number')
      : [],
  };
}

export interface AuthOptions {
  sessionExpireS: number;
  rateLimit: RateLimitOptions;
  trustedDeviceDays: number;
  now?: () => number;
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
}

export class AuthService extends EventEmitter<{ changed: [] }> {
  private readonly limiter: LoginRateLimiter;
  private readonly now: () => number;

  private constructor(
    private state: AuthState,
    private readonly file: JsonFile<AuthState>,
    readonly sessions: SessionStore,
    private readonly opts: AuthOptions,
  ) {
    super();
    this.now = opts.now ?? Date.now;
    this.limiter = new LoginRateLimiter(opts.rateLimit, this.now);
  }

  static async open(dataDir: string, opts: AuthOptions): Promise<AuthService> {
    const file = new JsonFile<AuthState>(join(dataDir, 'auth.json'), parseState);
    const state = await file.load();
    const sessions = await SessionStore.open(join(dataDir, 'sessions.json'), opts.now);
    return new AuthService(state, file, sessions, opts);
  }

  isInited(): boolean {
    return this.state.password_hash !== null;
  }

  isTwoFaEnabled(): boolean {
    return this.state.totp_secret !== null;
  }

  /** First run only: never resets an initialised device. */
  async init(password: string): Promise<void> {
    if (this.isInited()) throw new ForbiddenError('The device is already initialized');
    if (!isValidAdminPassword(password)) {
      throw new ValidatorError(
        "The argument 'password' is not a valid password (5 to 63 printable characters)",
      );
    }
    const hash = await hashPassword(password);
    // Re-check after the await: two concurrent init calls must not both win.
    if (this.isInited()) throw new ForbiddenError('The device is already initialized');
    await this.save({ ...this.state, password_hash: hash });
  }

  checkUserSyntax(user: string): void {
    if (!USER_RE.test(user))
      throw new ValidatorError(
        `The argument 'user' (${JSON.stringify(user)}) is not a valid username characters`,
      );
  }

  /** Verifies a password (+ TOTP when on) without the rate limit; for X-KVMD headers too. */
  async verifyCredentials(
    user: string,
    passwd: string,
    code?: string,
    trustedToken?: string,
  ): Promise<boolean> {
    const hash = this.state.password_hash;
    const secret = this.state.totp_secret;
    let password = passwd;
    let totpCode = code;
    const trusted = trustedToken !== undefined && this.isTrusted(trustedToken);
    if (secret && totpCode === undefined && !trusted) {
      totpCode = passwd.slice(-6);
      password = passwd.slice(0, -6);
    }
    const passwordOk = await verifyPassword(password, hash ?? DUMMY_HASH);
    if (!hash || user !== ADMIN_USER || !passwordOk) return false;
    if (!secret || (trusted && code === undefined)) return true;
    return verifyTotp(secret, totpCode ?? '', this.now());
  }

  /** Login: returns a new session token or throws 403 / 429. */
  async login(args: LoginArgs): Promise<string> {
    this.checkUserSyntax(args.user);
    const wait = this.limiter.remaining(args.ip);
    if (wait > 0) throw new RateLimitError(wait);
    const ok = await this.verifyCredentials(args.user, args.passwd, args.code, args.trustedToken);
    if (!ok) {
      this.limiter.fail(args.ip);
      const locked = this.limiter.remaining(args.ip);
      if (locked > 0) throw new RateLimitError(locked);
      throw new ForbiddenError('Invalid username or password');
    }
    this.limiter.succeed(args.ip);
    if (args.dryRun) return '';
    const max = this.opts.sessionExpireS;
    const lifetimeS = args.expireS > 0 ? Math.min(args.expireS, max) : max;
    return this.sessions.create(args.user, lifetimeS * 1000);
  }

  /** The session of a token, slid forward, or null. */
  session(token: string): Session | null {
    return this.sessions.touch(token);
  }

  async logout(token: string): Promise<void> {
    await this.sessions.remove(token, 'logout');
  }

  async changePassword(
    user: string,
    oldPassword: string,
    newPassword: string,
    keepToken: string | null,
  ): Promise<void> {
    this.checkUserSyntax(user);
    if (
      user !== ADMIN_USER ||
      !(await verifyPassword(oldPassword, this.state.password_hash ?? DUMMY_HASH)) ||
      !this.isInited()
    ) {
      throw new ForbiddenError('The old password is not correct');
    }
    if (!isValidAdminPassword(newPassword)) {
      throw new ValidatorError(
        "The argument 'new_password' is not a valid password (5 to 63 printable characters)",
      );
    }
    await this.save({ ...this.state, password_hash: await hashPassword(newPassword), trusted: [] });
    await this.sessions.removeAllOf(user, keepToken, 'password_changed');
  }

  // --- two-factor ---------------------------------------------------------------------------

  createTwoFa(): { secret: string; uri: string } {
    if (this.isTwoFaEnabled()) throw new ForbiddenError('2FA is already enabled');
    const secret = newTotpSecret();
    return { secret, uri: totpUri(secret, TOTP_ISSUER, ADMIN_USER) };
  }

  async enableTwoFa(secret: string, key: string): Promise<void> {
    if (this.isTwoFaEnabled()) throw new ForbiddenError('2FA is already enabled');
    const decoded = base32Decode(secret);
    if (!decoded || decoded.length < 10)
      throw new ValidatorError("The argument 'secret' is not a valid base32 secret");
    if (!verifyTotp(secret, key, this.now())) throw new ForbiddenError('Invalid 2FA code');
    await this.save({
      ...this.state,
      totp_secret: secret.replace(/[\s=]/g, '').toUpperCase(),
      trusted: [],
    });
  }

  showTwoFa(): string | null {
    const secret = this.state.totp_secret;
    return secret ? totpUri(secret, TOTP_ISSUER, ADMIN_USER) : null;
  }

  verifyTwoFa(code: string): boolean {
    const secret = this.state.totp_secret;
    return secret !== null && verifyTotp(secret, code, this.now());
  }

  async disableTwoFa(): Promise<void> {
    await this.save({ ...this.state, totp_secret: null, trusted: [] });
  }

  // --- remembered devices -------------------------------------------------------------------

  async trustDevice(): Promise<{ token: string; maxAgeS: number }> {
    const token = newToken();
    const maxAgeS = this.opts.trustedDeviceDays * 86_400;
    const t = this.now();
    const trusted = this.state.trusted.filter((d) => d.expiresAt > t).slice(-31);
    trusted.push({ hash: hashToken(token), expiresAt: t + maxAgeS * 1000 });
    await this.save({ ...this.state, trusted });
    return { token, maxAgeS };
  }

  isTrusted(token: string): boolean {
    if (!this.isTwoFaEnabled() || !/^[0-9a-f]{64}$/.test(token)) return false;
    const hash = hashToken(token);
    const t = this.now();
    return this.state.trusted.some((d) => d.hash === hash && d.expiresAt > t);
  }

  private async save(next: AuthState): Promise<void> {
    await this.file.save(next);
    this.state = next;
    this.emit('changed');
  }

  async close(): Promise<void> {
    await this.sessions.persist();
  }
}
