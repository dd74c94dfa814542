/**
 * Fleet accounts (docs/cloud.md): SPEC 5's sign-up with an e-mail code sent over SMTP, login
 * with optional TOTP, sessions (cookie `fleet_session`, only its SHA-256 stored), TOTP setup.
 * Passwords are hashed with the device server's scrypt (passwords.ts), behind a HashGate so a
 * burst of logins cannot take the thread pool; TOTP is the device server's too (totp.ts).
 */
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import {
  CLOUD_EMAIL_RE,
  CLOUD_REGIONS,
  EMAIL_CODE_DIGITS,
  EMAIL_CODE_MAX_TRIES,
  EMAIL_CODE_TTL_S,
  FLEET_TRUST_TTL_S,
  validateCloudLogin,
  validateCloudSignUp,
  type CloudLogin,
  type CloudSignUp,
  type FleetMe,
} from '@kvm/protocol';
import { HashGate } from '../../../server/src/services/auth/hash-gate';
import { hashPassword, verifyPassword } from '../../../server/src/services/auth/passwords';
import { matchTotpStep, newTotpSecret, totpUri } from '../../../server/src/services/auth/totp';
import type { FleetRole, FleetUser } from '../context';
import { inTransaction, uniqueViolation, type Db } from '../db/pool';
import {
  AccountExistsError,
  CloudFormError,
  ConflictStateError,
  InvalidCredentialsError,
  InvalidTotpError,
  MailFailedError,
  TotpRequiredError,
} from '../errors';
import { Throttle } from '../throttle';
import type { Mailer } from './mailer';

/** Session lifetime, sliding with use (refreshed at most every SESSION_TOUCH_MS). */
export const SESSION_TTL_MS = 7 * 24 * 3600_000;
const SESSION_TOUCH_MS = 5 * 60_000;
/** Sessions one account may hold; a new login past it ends the oldest. */
export const MAX_SESSIONS_PER_ACCOUNT = 32;
export const SESSION_COOKIE = 'fleet_session';
/** "Remember this browser" after a TOTP sign-in (docs/cloud.md "Users, groups and roles"). */
export const TRUST_COOKIE = 'fleet_trust';
/** Trusted browsers one account may hold; a new one past it drops the oldest. */
export const MAX_TRUSTED_PER_ACCOUNT = 20;
/** The password hash of an account that has none (made by OpenID Connect): nothing matches it. */
export const NO_PASSWORD = '!none';
const TOKEN_RE = /^[0-9a-f]{64}$/;
/** pg_advisory_xact_lock key of "who is the first admin" (any constant the fleet uses once). */
export const FIRST_ADMIN_LOCK = 0x6b766d02;
const MAX_EMAIL = 254;

/** An account as `GET me` answers it. */
export type Account = FleetMe;

export interface AccountRow {
  id: string;
  username: string;
  email: string;
  region: string;
  role: FleetRole;
  password_hash: string;
  totp_secret: string | null;
  disabled_at: Date | null;
  created_at: Date;
  /** Only where the query selects it (ACCOUNT_SELECT). */
  oidc_issuer?: string | null;
}

/** An account row with the issuer of its OpenID Connect identity (or null). */
export const ACCOUNT_SELECT = `SELECT a.*, (SELECT o.issuer FROM oidc_identities o
  WHERE o.account_id = a.id ORDER BY o.created_at LIMIT 1) AS oidc_issuer FROM accounts a`;

/** How a login was let in (the `login` event's method). */
export type LoginMethod = 'password' | 'totp_trusted' | 'oidc';

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Constant-time equality of two hex digests. */
export function digestEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

export function publicAccount(r: AccountRow): Account {
  return {
    id: r.id,
    username: r.username,
    email: r.email,
    region: r.region,
    role: r.role,
    totp_enabled: r.totp_secret !== null,
    oidc_issuer: r.oidc_issuer ?? null,
    created_at: r.created_at.getTime(),
  };
}

/** A code of `digits` digits from the CSPRNG. */
export function digitCode(digits: number): string {
  return randomInt(0, 10 ** digits)
    .toString()
    .padStart(digits, '0');
}

export interface AccountsOptions {
  /** The issuer shown in authenticator apps. */
  issuer: string;
  hashGate?: HashGate;
}

export class Accounts {
  private readonly gate: HashGate;
  /** Sign-up codes: per address 10 an hour, per e-mail address 3 in 10 minutes. */
  readonly codeByAddress = new Throttle('Too many sign-up codes from this address', {
    max: 10,
    windowS: 3600,
    lockS: 3600,
  });
  readonly codeByEmail = new Throttle('Too many sign-up codes for this e-mail address', {
    max: 3,
    windowS: 600,
    lockS: 600,
  });
  /** Failed logins: per address 10 a minute, per username 20 in 15 minutes. */
  readonly loginByAddress = new Throttle('Too many failed logins from this address', {
    max: 10,
    windowS: 60,
    lockS: 60,
  });
  readonly loginByUser = new Throttle('Too many failed logins for this account', {
    max: 20,
    windowS: 900,
    lockS: 900,
  });
  private dummyHash: Promise<string> | null = null;

  constructor(
    /** Also the users and groups API's (access/routes.ts). */
    readonly db: Db,
    private readonly mailer: Mailer,
    private readonly log: Logger,
    private readonly opts: AccountsOptions,
  ) {
    this.gate =
      opts.hashGate ?? new HashGate({ overall: 4, perAddress: 1, queue: 64, perAddressQueue: 4 });
  }

  // ---- sign-up ---------------------------------------------------------------------------------

  /** Sends a 6-digit sign-up code to `email` (valid 10 minutes, 5 tries). */
  async sendEmailCode(emailIn: unknown, ip: string): Promise<{ expires_in: number }> {
    const email = typeof emailIn === 'string' ? emailIn.trim() : '';
    if (email.length > MAX_EMAIL || !CLOUD_EMAIL_RE.test(email)) {
      throw new CloudFormError({ email: 'email_invalid' });
    }
    const key = email.toLowerCase();
    this.codeByAddress.take(ip);
    this.codeByEmail.take(key);
    const taken = await this.db.query('SELECT 1 FROM accounts WHERE lower(email) = $1', [key]);
    if (taken.rowCount) throw new AccountExistsError({ email: 'email_taken' });
    const code = digitCode(EMAIL_CODE_DIGITS);
    await this.db.query(
      `INSERT INTO email_codes (email, code_hash, tries, expires_at)
       VALUES ($1, $2, 0, now() + make_interval(secs => $3))
       ON CONFLICT (email) DO UPDATE
         SET code_hash = EXCLUDED.code_hash, tries = 0, expires_at = EXCLUDED.expires_at,
             created_at = now()`,
      [key, sha256(`${key}:${code}`), EMAIL_CODE_TTL_S],
    );
    try {
      await this.mailer.send(
        email,
        'Your fleet sign-up code',
        `Your sign-up code is ${code}.\nIt is valid for ${EMAIL_CODE_TTL_S / 60} minutes.\n\n` +
          'If you did not ask for it, ignore this mail.\n',
      );
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'sign-up mail not sent');
      await this.db.query('DELETE FROM email_codes WHERE email = $1', [key]);
      throw new MailFailedError('The fleet could not send the e-mail; try again later');
    }
    return { expires_in: EMAIL_CODE_TTL_S };
  }

  /** SPEC 5's sign-up: form rules, the e-mail code, unique username and e-mail. */
  async signUp(form: Partial<CloudSignUp>, ip: string): Promise<Account> {
    const fields = validateCloudSignUp(form);
    if (!fields.region && !(CLOUD_REGIONS as readonly string[]).includes(form.region ?? '')) {
      fields.region = 'region_required';
    }
    if ((form.email ?? '').length > MAX_EMAIL) fields.email = 'email_invalid';
    if (Object.keys(fields).length > 0) throw new CloudFormError(fields);
    const username = form.username!;
    const email = form.email!.trim();
    const key = email.toLowerCase();
    // hash before the transaction: no row lock is held while scrypt runs
    const hash = await this.gate.run(ip, () => hashPassword(form.password!));
    const outcome = await inTransaction(this.db, async (c) => {
      const row = (
        await c.query<{ code_hash: string; tries: number; live: boolean }>(
          `SELECT code_hash, tries, expires_at > now() AS live FROM email_codes
           WHERE email = $1 FOR UPDATE`,
          [key],
        )
      ).rows[0];
      if (!row || !row.live || row.tries >= EMAIL_CODE_MAX_TRIES) return 'bad-code' as const;
      if (!digestEqual(row.code_hash, sha256(`${key}:${form.email_code!}`))) {
        await c.query('UPDATE email_codes SET tries = tries + 1 WHERE email = $1', [key]);
        return 'wrong-code' as const;
      }
      await c.query('SAVEPOINT account');
      try {
        // the fleet's first account is its admin: sign-ups queue on this lock for that check
        await c.query('SELECT pg_advisory_xact_lock($1)', [FIRST_ADMIN_LOCK]);
        const made = await c.query<AccountRow>(
          `INSERT INTO accounts (username, email, password_hash, region, role)
           VALUES ($1, $2, $3, $4,
             CASE WHEN EXISTS (SELECT 1 FROM accounts WHERE role = 'admin') THEN 'user' ELSE 'admin' END)
           RETURNING *`,
          [username, email, hash, form.region],
        );
        await c.query('DELETE FROM email_codes WHERE email = $1', [key]);
        await c.query(`INSERT INTO events (kind, account_id, detail) VALUES ('signup', $1, $2)`, [
          made.rows[0]!.id,
          { ip },
        ]);
        return made.rows[0]!;
      } catch (e) {
        const which = uniqueViolation(e);
        if (which === null) throw e;
        await c.query('ROLLBACK TO SAVEPOINT account');
        return which.includes('username') ? ('username-taken' as const) : ('email-taken' as const);
      }
    });
    if (outcome === 'bad-code' || outcome === 'wrong-code') {
      throw new CloudFormError(
        { email_code: 'email_code_invalid' },
        'Wrong or expired e-mail code',
      );
    }
    if (outcome === 'username-taken') throw new AccountExistsError({ username: 'username_taken' });
    if (outcome === 'email-taken') throw new AccountExistsError({ email: 'email_taken' });
    return publicAccount(outcome);
  }

  // ---- login -----------------------------------------------------------------------------------

  /**
   * The account of these credentials (SPEC 5's login rules: password 6-10), TOTP checked when
   * the account has it. Failures are counted per address and per username.
   */
  async authenticate(
    form: Partial<CloudLogin>,
    ip: string,
    opts: { region?: boolean } = {},
  ): Promise<Account> {
    return (await this.login(form, ip, opts)).account;
  }

  /**
   * `authenticate`, and the browser's "remember" cookie: a live `trust` token of this account
   * stands in for its TOTP code (the password is still checked); `remember` with a right code
   * makes a new one (`trustToken`).
   */
  async login(
    form: Partial<CloudLogin>,
    ip: string,
    opts: { region?: boolean; trust?: string; remember?: boolean } = {},
  ): Promise<{ account: Account; method: LoginMethod; trustToken?: string }> {
    // the region is SPEC 5's login field on the device; the fleet's own page has none
    const fields = validateCloudLogin(opts.region ? form : { ...form, region: form.region || '-' });
    if (Object.keys(fields).length > 0) throw new CloudFormError(fields);
    const username = String(form.username);
    if (username.length > 64) throw new InvalidCredentialsError();
    const userKey = username.toLowerCase();
    const byAddress = this.loginByAddress.take(ip);
    const byUser = this.loginByUser.take(userKey);
    const row = (
      await this.db.query<AccountRow>(`${ACCOUNT_SELECT} WHERE lower(a.username) = $1`, [userKey])
    ).rows[0];
    // an account without a password (OpenID Connect) takes as long as a wrong one
    const stored =
      row && row.password_hash !== NO_PASSWORD ? row.password_hash : await this.dummy();
    const ok = await this.gate.run(ip, () => verifyPassword(String(form.password), stored));
    if (!row || !ok || row.password_hash === NO_PASSWORD) throw new InvalidCredentialsError();
    if (row.disabled_at) throw new InvalidCredentialsError(undefined, 'disabled');
    let method: LoginMethod = 'password';
    let trustToken: string | undefined;
    if (row.totp_secret) {
      if (opts.trust && (await this.trusted(row.id, opts.trust))) {
        method = 'totp_trusted';
      } else {
        if (!form.totp) throw new TotpRequiredError();
        await this.useTotp(row.id, row.totp_secret, String(form.totp));
        if (opts.remember) trustToken = await this.trustBrowser(row.id);
      }
    }
    this.loginByAddress.forgive(byAddress);
    this.loginByUser.forgive(byUser);
    return { account: publicAccount(row), method, ...(trustToken ? { trustToken } : {}) };
  }

  /** The account id of a username (for the log of a failed login), or null. */
  async idOf(username: string): Promise<string | null> {
    const r = await this.db.query<{ id: string }>(
      'SELECT id FROM accounts WHERE lower(username) = $1',
      [username.toLowerCase()],
    );
    return r.rows[0]?.id ?? null;
  }

  /** A scrypt hash of `password`, through the gate (admins setting passwords). */
  hash(ip: string, password: string): Promise<string> {
    return this.gate.run(ip, () => hashPassword(password));
  }

  // ---- trusted browsers (TOTP "remember this browser") -----------------------------------------

  /** A new trust token for the account (only its hash stored; at most 20, the oldest go). */
  async trustBrowser(accountId: string): Promise<string> {
    const token = randomBytes(32).toString('hex');
    await inTransaction(this.db, async (c) => {
      await c.query(
        `INSERT INTO trusted_browsers (token_hash, account_id, expires_at)
         VALUES ($1, $2, now() + make_interval(secs => $3))`,
        [sha256(token), accountId, FLEET_TRUST_TTL_S],
      );
      await c.query(
        `DELETE FROM trusted_browsers WHERE account_id = $1 AND (expires_at < now() OR
           token_hash IN (SELECT token_hash FROM trusted_browsers WHERE account_id = $1
                          ORDER BY created_at DESC, token_hash OFFSET $2))`,
        [accountId, MAX_TRUSTED_PER_ACCOUNT],
      );
    });
    return token;
  }

  /** Whether `token` is a live trust token of this account (another account's is not). */
  async trusted(accountId: string, token: string): Promise<boolean> {
    if (!TOKEN_RE.test(token)) return false;
    const r = await this.db.query(
      `SELECT 1 FROM trusted_browsers
       WHERE token_hash = $1 AND account_id = $2 AND expires_at > now()`,
      [sha256(token), accountId],
    );
    return r.rowCount === 1;
  }

  /** Forgets every browser the account trusted. */
  async forgetTrusted(accountId: string): Promise<void> {
    await this.db.query('DELETE FROM trusted_browsers WHERE account_id = $1', [accountId]);
  }

  /** Ends every session of the account and forgets its trusted browsers. */
  async endAll(accountId: string): Promise<void> {
    await this.db.query('DELETE FROM sessions WHERE account_id = $1', [accountId]);
    await this.forgetTrusted(accountId);
  }

  /** A hash to verify against for unknown usernames, so they take as long as known ones. */
  private dummy(): Promise<string> {
    this.dummyHash ??= hashPassword(randomBytes(16).toString('hex'));
    return this.dummyHash;
  }

  /** Checks `code` against `secret` and spends its time step (a code is good once). */
  private async useTotp(accountId: string, secret: string, code: string): Promise<void> {
    const step = matchTotpStep(secret, code);
    if (step === null) throw new InvalidTotpError();
    const r = await this.db.query(
      `UPDATE accounts SET totp_last_step = $2
       WHERE id = $1 AND (totp_last_step IS NULL OR totp_last_step < $2)`,
      [accountId, step],
    );
    if (r.rowCount !== 1) throw new InvalidTotpError();
  }

  // ---- sessions --------------------------------------------------------------------------------

  /** A new session for the account: the token for the cookie (only its hash is stored). */
  async createSession(accountId: string, ip: string): Promise<string> {
    const token = randomBytes(32).toString('hex');
    await inTransaction(this.db, async (c) => {
      await c.query(
        `INSERT INTO sessions (token_hash, account_id, expires_at, address)
         VALUES ($1, $2, now() + make_interval(secs => $3), $4)`,
        [sha256(token), accountId, SESSION_TTL_MS / 1000, ip],
      );
      await c.query(
        `DELETE FROM sessions WHERE account_id = $1 AND token_hash IN (
           SELECT token_hash FROM sessions WHERE account_id = $1
           ORDER BY last_seen DESC OFFSET $2)`,
        [accountId, MAX_SESSIONS_PER_ACCOUNT],
      );
    });
    // expired sessions of everyone go now and then
    if (Math.random() < 0.05) {
      await this.db.query('DELETE FROM sessions WHERE expires_at < now()').catch(() => {});
    }
    return token;
  }

  /** The user of a session token, or null (unknown, malformed or expired). */
  async userOfToken(token: string | undefined): Promise<FleetUser | null> {
    if (!token || !TOKEN_RE.test(token)) return null;
    const hash = sha256(token);
    const r = await this.db.query<{
      account_id: string;
      username: string;
      role: FleetRole;
      touch: boolean;
    }>(
      `SELECT s.account_id, a.username, a.role,
              s.last_seen < now() - make_interval(secs => $2) AS touch
       FROM sessions s JOIN accounts a ON a.id = s.account_id
       WHERE s.token_hash = $1 AND s.expires_at > now() AND a.disabled_at IS NULL`,
      [hash, SESSION_TOUCH_MS / 1000],
    );
    const row = r.rows[0];
    if (!row) return null;
    if (row.touch) {
      await this.db.query(
        `UPDATE sessions SET last_seen = now(), expires_at = now() + make_interval(secs => $2)
         WHERE token_hash = $1`,
        [hash, SESSION_TTL_MS / 1000],
      );
    }
    return { accountId: row.account_id, username: row.username, role: row.role };
  }

  async endSession(token: string | undefined): Promise<void> {
    if (!token || !TOKEN_RE.test(token)) return;
    await this.db.query('DELETE FROM sessions WHERE token_hash = $1', [sha256(token)]);
  }

  async get(accountId: string): Promise<Account | null> {
    const r = await this.db.query<AccountRow>(`${ACCOUNT_SELECT} WHERE a.id = $1`, [accountId]);
    return r.rows[0] ? publicAccount(r.rows[0]) : null;
  }

  // ---- TOTP ------------------------------------------------------------------------------------

  /** Starts 2FA setup: a new secret (pending until `totpEnable` sees a code of it). */
  async totpSetup(accountId: string): Promise<{ secret: string; uri: string }> {
    const secret = newTotpSecret();
    const r = await this.db.query<{ username: string }>(
      `UPDATE accounts SET totp_pending = $2 WHERE id = $1 AND totp_secret IS NULL
       RETURNING username`,
      [accountId, secret],
    );
    if (!r.rows[0]) throw new ConflictStateError('2FA is on already: turn it off first');
    return { secret, uri: totpUri(secret, this.opts.issuer, r.rows[0].username) };
  }

  /** Turns 2FA on with a code of the pending secret. */
  async totpEnable(accountId: string, code: unknown): Promise<void> {
    const r = await this.db.query<{ totp_pending: string | null; totp_secret: string | null }>(
      'SELECT totp_pending, totp_secret FROM accounts WHERE id = $1',
      [accountId],
    );
    const row = r.rows[0];
    if (!row || row.totp_secret) throw new ConflictStateError('2FA is on already');
    if (!row.totp_pending) throw new ConflictStateError('Start the 2FA setup first');
    const step = typeof code === 'string' ? matchTotpStep(row.totp_pending, code) : null;
    if (step === null) throw new InvalidTotpError();
    await this.db.query(
      `UPDATE accounts SET totp_secret = totp_pending, totp_pending = NULL, totp_last_step = $2
       WHERE id = $1 AND totp_pending = $3`,
      [accountId, step, row.totp_pending],
    );
    await this.db.query(`INSERT INTO events (kind, account_id) VALUES ('totp_enabled', $1)`, [
      accountId,
    ]);
  }

  /** Turns 2FA off: the password and a current code. */
  async totpDisable(
    accountId: string,
    password: unknown,
    code: unknown,
    ip: string,
  ): Promise<void> {
    const r = await this.db.query<AccountRow>('SELECT * FROM accounts WHERE id = $1', [accountId]);
    const row = r.rows[0];
    if (!row?.totp_secret) throw new ConflictStateError('2FA is off');
    const attempt = this.loginByAddress.take(ip);
    const ok = await this.gate.run(ip, () =>
      verifyPassword(String(password ?? ''), row.password_hash),
    );
    if (!ok) throw new InvalidCredentialsError('Wrong password');
    await this.useTotp(accountId, row.totp_secret, String(code ?? ''));
    this.loginByAddress.forgive(attempt);
    await this.db.query(
      'UPDATE accounts SET totp_secret = NULL, totp_pending = NULL WHERE id = $1',
      [accountId],
    );
    await this.forgetTrusted(accountId);
    await this.db.query(`INSERT INTO events (kind, account_id) VALUES ('totp_disabled', $1)`, [
      accountId,
    ]);
  }
}
