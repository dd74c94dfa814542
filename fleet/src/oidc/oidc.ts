/**
 * Sign-in with an OpenID Connect provider (docs/cloud.md "Users, groups and roles"): the
 * authorization code flow with PKCE, state and nonce (openid-client). What a sign-in under way
 * needs is kept in PostgreSQL (oidc_states: any replica may get the callback), single use, for
 * 10 minutes, and tied to the browser that started it by a cookie (`fleet_oidc`, only its hash
 * stored) so a callback link cannot sign someone else in. A provider user (issuer, sub) is one
 * account (oidc_identities); an unknown one gets a new account when `create_users` is on.
 */
import { randomBytes } from 'node:crypto';
import * as client from 'openid-client';
import { CLOUD_EMAIL_RE, CLOUD_USERNAME_RE, type FleetRole } from '@kvm/protocol';
import {
  FIRST_ADMIN_LOCK,
  NO_PASSWORD,
  digestEqual,
  sha256,
  type Account,
  type Accounts,
} from '../accounts/accounts';
import type { FleetOidcConfig } from '../context';
import { inTransaction, uniqueViolation } from '../db/pool';
import { Throttle } from '../throttle';

/** How long a sign-in at the provider may take. */
export const OIDC_STATE_TTL_S = 600;
export const OIDC_COOKIE = 'fleet_oidc';
const MAX_NEXT = 1024;

/** Why a sign-in failed: the `oidc_error` code the browser is sent back with. */
export type OidcErrorCode =
  | 'unavailable'
  | 'rate_limited'
  | 'state'
  | 'denied'
  | 'provider'
  | 'no_account'
  | 'disabled'
  | 'email_taken';

export class OidcError extends Error {
  constructor(
    readonly code: OidcErrorCode,
    message: string = code,
  ) {
    super(message);
  }
}

/**
 * Where to go after signing in: a path of this site (`/...`, not `//` or `/\`, no spaces or
 * control characters a browser would drop), else `/` (no open redirect).
 */
export function safeNextPath(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length > MAX_NEXT) return '/';
  // eslint-disable-next-line no-control-regex
  if (!/^\/(?![/\\])[^\s\\\u0000-\u001f\u007f]*$/.test(raw)) return '/';
  const base = 'https://fleet.invalid';
  return new URL(raw, base).origin === base ? raw : '/';
}

/**
 * A SPEC 5 username (5-15 of letters, digits, `_ . -`, a letter or digit first) from the
 * provider's preferred_username or e-mail's local part; `suffix` digits make it unique.
 */
export function usernameFrom(claims: Record<string, unknown>, suffix = ''): string {
  const pick = (v: unknown) => (typeof v === 'string' ? v : '');
  const raw =
    pick(claims.preferred_username) || pick(claims.email).split('@')[0] || pick(claims.name);
  let base = raw
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9_.-]/g, '')
    .replace(/^[^A-Za-z0-9]+/, '');
  if (!base) base = 'user';
  base = base.slice(0, 15 - suffix.length);
  let name = base + suffix;
  while (name.length < 5) name += '0';
  return CLOUD_USERNAME_RE.test(name) ? name : `user${suffix}`.padEnd(5, '0');
}

/** Whether the claim `name` is `value` or a list holding it. */
function claimMatches(claims: Record<string, unknown>, rule: { name: string; value: string }) {
  const v = claims[rule.name];
  return v === rule.value || (Array.isArray(v) && v.includes(rule.value));
}

export interface OidcStart {
  url: string;
  /** The browser's half of the state (cookie `fleet_oidc`). */
  browser: string;
}

export class Oidc {
  private discovered: Promise<client.Configuration> | null = null;
  /** Sign-ins started per address: 20 a minute (each is a row until it expires). */
  readonly starts = new Throttle('Too many sign-ins started from this address', {
    max: 20,
    windowS: 60,
    lockS: 60,
  });

  constructor(
    private readonly cfg: FleetOidcConfig,
    private readonly accounts: Accounts,
  ) {}

  get name(): string {
    return this.cfg.name;
  }

  /** The provider's configuration (discovered once; a failure is tried again next time). */
  private configuration(): Promise<client.Configuration> {
    this.discovered ??= client
      .discovery(
        new URL(this.cfg.issuer),
        this.cfg.client_id,
        undefined,
        client.ClientSecretBasic(this.cfg.client_secret),
        {
          timeout: 10,
          ...(new URL(this.cfg.issuer).protocol === 'http:'
            ? { execute: [client.allowInsecureRequests] }
            : {}),
        },
      )
      .catch((e: unknown) => {
        this.discovered = null;
        throw new OidcError('unavailable', (e as Error).message);
      });
    return this.discovered;
  }

  /** `GET oidc/start?next=`: the provider's authorization URL; the state is stored. */
  async start(nextRaw: unknown, ip: string): Promise<OidcStart> {
    try {
      this.starts.take(ip);
    } catch {
      throw new OidcError('rate_limited');
    }
    const config = await this.configuration();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const verifier = client.randomPKCECodeVerifier();
    const browser = randomBytes(32).toString('hex');
    const db = this.accounts.db;
    await db.query('DELETE FROM oidc_states WHERE expires_at < now()');
    await db.query(
      `INSERT INTO oidc_states (state, browser_hash, nonce, verifier, next, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`,
      [state, sha256(browser), nonce, verifier, safeNextPath(nextRaw), OIDC_STATE_TTL_S],
    );
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.cfg.redirect_uri,
      scope: this.cfg.scopes.join(' '),
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    return { url: url.href, browser };
  }

  /**
   * `GET oidc/callback?code=&state=`: checks it all (state once, this browser, PKCE, the ID
   * token's signature, issuer, audience, nonce), then the account and where to go.
   */
  async callback(
    search: string,
    browser: string | undefined,
  ): Promise<{ account: Account; next: string; created: boolean }> {
    const params = new URLSearchParams(search);
    const state = params.get('state') ?? '';
    const row = (
      await this.accounts.db.query<{
        browser_hash: string;
        nonce: string;
        verifier: string;
        next: string;
        live: boolean;
      }>(
        `DELETE FROM oidc_states WHERE state = $1
         RETURNING browser_hash, nonce, verifier, next, expires_at > now() AS live`,
        [state.slice(0, 256)],
      )
    ).rows[0];
    if (!row || !row.live || !browser || !digestEqual(sha256(browser), row.browser_hash)) {
      throw new OidcError('state');
    }
    if (params.has('error')) throw new OidcError('denied', params.get('error') ?? '');
    const config = await this.configuration();
    const current = new URL(this.cfg.redirect_uri);
    current.search = params.toString();
    let claims: Record<string, unknown>;
    try {
      const tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: row.verifier,
        expectedState: state,
        expectedNonce: row.nonce,
        idTokenExpected: true,
      });
      claims = { ...tokens.claims() };
    } catch (e) {
      throw new OidcError('provider', (e as Error).message);
    }
    const { account, created } = await this.accountOf(claims);
    if (account.disabled) throw new OidcError('disabled');
    const full = await this.accounts.get(account.id);
    if (!full) throw new OidcError('no_account');
    return { account: full, next: row.next, created };
  }

  /** The account of (iss, sub), made when unknown and `create_users` is on. */
  private async accountOf(
    claims: Record<string, unknown>,
  ): Promise<{ account: { id: string; disabled: boolean }; created: boolean }> {
    const issuer = String(claims.iss);
    const subject = String(claims.sub);
    const db = this.accounts.db;
    const known = await db.query<{ id: string; disabled: boolean }>(
      `SELECT a.id, a.disabled_at IS NOT NULL AS disabled
       FROM oidc_identities o JOIN accounts a ON a.id = o.account_id
       WHERE o.issuer = $1 AND o.subject = $2`,
      [issuer, subject],
    );
    if (known.rows[0]) return { account: known.rows[0], created: false };
    if (!this.cfg.create_users) throw new OidcError('no_account');
    const mail = typeof claims.email === 'string' ? claims.email.trim() : '';
    const email =
      mail.length <= 254 && CLOUD_EMAIL_RE.test(mail) && claims.email_verified !== false
        ? mail
        : `${sha256(`${issuer} ${subject}`).slice(0, 24)}@oidc.invalid`;
    const role: FleetRole =
      this.cfg.admin_claim && claimMatches(claims, this.cfg.admin_claim) ? 'admin' : 'user';
    const made = await inTransaction(db, async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [FIRST_ADMIN_LOCK]);
      // two callbacks of one new user at once: the second finds the first's account
      const again = await c.query<{ id: string }>(
        'SELECT account_id AS id FROM oidc_identities WHERE issuer = $1 AND subject = $2',
        [issuer, subject],
      );
      if (again.rows[0]) return { id: again.rows[0].id, created: false };
      for (let i = 0; i < 20; i += 1) {
        const width = 2 + (i >> 2);
        const suffix =
          i === 0 ? '' : String(randomBytes(4).readUInt32BE() % 10 ** width).padStart(width, '0');
        await c.query('SAVEPOINT account');
        try {
          const r = await c.query<{ id: string }>(
            `INSERT INTO accounts (username, email, password_hash, region, role)
             VALUES ($1, $2, $3,
               COALESCE((SELECT region FROM accounts ORDER BY created_at LIMIT 1), 'eu'),
               CASE WHEN $4 = 'admin' OR NOT EXISTS (SELECT 1 FROM accounts WHERE role = 'admin')
                    THEN 'admin' ELSE 'user' END)
             RETURNING id`,
            [usernameFrom(claims, suffix), email, NO_PASSWORD, role],
          );
          const id = r.rows[0]!.id;
          await c.query(
            'INSERT INTO oidc_identities (issuer, subject, account_id) VALUES ($1, $2, $3)',
            [issuer, subject, id],
          );
          return { id, created: true };
        } catch (e) {
          const which = uniqueViolation(e);
          if (which === null) throw e;
          await c.query('ROLLBACK TO SAVEPOINT account');
          if (!which.includes('username')) throw new OidcError('email_taken');
        }
      }
      throw new OidcError('provider', 'no free username');
    });
    return { account: { id: made.id, disabled: false }, created: made.created };
  }
}
