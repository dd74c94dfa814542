/**
 * The admin's users API (docs/cloud.md "Users, groups and roles"): list with search and paging,
 * create (SPEC 5's username and password rules, no e-mail code), change role / disabled /
 * password, delete. The fleet always keeps one active admin: a change that would leave none is
 * refused (409), decided under the same advisory lock sign-up takes for "the first is admin".
 */
import {
  CLOUD_EMAIL_RE,
  FLEET_QUERY_MAX,
  validateCloudSignUp,
  type FleetRole,
  type FleetUserCreate,
  type FleetUserPage,
  type FleetUserPatch,
  type FleetUserRow,
} from '@kvm/protocol';
import type { FleetUser } from '../context';
import { inTransaction, uniqueViolation, type Db } from '../db/pool';
import { UUID_RE, escapeLike, makeCursor } from '../devices/devices';
import { pageLimit } from '../events/events';
import {
  AccountExistsError,
  CloudFormError,
  ConflictStateError,
  NotFoundError,
  ValidatorError,
  type FleetFieldError,
} from '../errors';
import { FIRST_ADMIN_LOCK, type Accounts } from './accounts';

const ROLES: readonly FleetRole[] = ['admin', 'user'];

/** A search string (at most 64 characters), '' when absent. */
function searchOf(raw: unknown): string {
  if (raw === undefined) return '';
  if (typeof raw !== 'string' || raw.length > FLEET_QUERY_MAX) {
    throw new ValidatorError(`q must be at most ${FLEET_QUERY_MAX} characters`);
  }
  return raw;
}

interface UserListRow {
  id: string;
  username: string;
  email: string;
  role: FleetRole;
  disabled_at: Date | null;
  totp_secret: string | null;
  oidc: boolean;
  groups: Array<{ id: string; name: string }> | null;
  created_at: Date;
  total?: string;
}

/** A page's cursor (devices.ts makeCursor's form): the last row's [lower(username), id]. */
function decodeCursor(raw: unknown): [string, string] | null {
  if (raw === undefined || raw === '') return null;
  try {
    const v: unknown = JSON.parse(Buffer.from(String(raw), 'base64url').toString('utf8'));
    if (
      Array.isArray(v) &&
      v.length === 2 &&
      typeof v[0] === 'string' &&
      typeof v[1] === 'string' &&
      UUID_RE.test(v[1])
    ) {
      return [v[0], v[1]];
    }
  } catch {
    // below
  }
  throw new ValidatorError('Malformed cursor');
}

/** The columns of a FleetUserRow (alias `a` for accounts). */
const USER_COLUMNS = `a.id, a.username, a.email, a.role, a.disabled_at, a.totp_secret, a.created_at,
  EXISTS (SELECT 1 FROM oidc_identities o WHERE o.account_id = a.id) AS oidc,
  (SELECT json_agg(json_build_object('id', g.id, 'name', g.name) ORDER BY lower(g.name))
     FROM user_group_members m JOIN user_groups g ON g.id = m.group_id
     WHERE m.account_id = a.id) AS groups`;

function userRow(u: UserListRow): FleetUserRow {
  return {
    id: u.id,
    username: u.username,
    email: u.email,
    role: u.role,
    disabled: u.disabled_at !== null,
    totp_enabled: u.totp_secret !== null,
    oidc: u.oidc,
    groups: u.groups ?? [],
    created_at: u.created_at.getTime(),
  };
}

/** What `PATCH users/:id` and `DELETE users/:id` did, for the event log. */
export interface UserChange {
  id: string;
  username: string;
  changed: string[];
}

export class Users {
  constructor(
    private readonly db: Db,
    private readonly accounts: Accounts,
  ) {}

  /** `GET users?q=&limit=&cursor=`: by username (case-insensitive); q matches username or e-mail. */
  async list(query: Record<string, unknown>): Promise<FleetUserPage> {
    const q = searchOf(query.q);
    const limit = pageLimit(query.limit as string | undefined);
    const after = decodeCursor(query.cursor);
    const params: unknown[] = [`%${escapeLike(q)}%`, limit + 1];
    let where = `(a.username ILIKE $1 OR a.email ILIKE $1)`;
    const filtered = where;
    if (after) {
      params.push(after[0], after[1]);
      where += ` AND (lower(a.username), a.id) > ($3, $4::uuid)`;
    }
    const r = await this.db.query<UserListRow>(
      `SELECT ${USER_COLUMNS}, (SELECT count(*) FROM accounts a WHERE ${filtered}) AS total
       FROM accounts a WHERE ${where}
       ORDER BY lower(a.username), a.id LIMIT $2`,
      params,
    );
    const rows = r.rows.slice(0, limit);
    const last = rows[rows.length - 1];
    return {
      users: rows.map(userRow),
      next: r.rows.length > limit && last ? makeCursor(last.username.toLowerCase(), last.id) : null,
      total: r.rows[0] ? Number(r.rows[0].total) : await this.count(filtered, params[0]),
    };
  }

  private async count(where: string, like: unknown): Promise<number> {
    const r = await this.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM accounts a WHERE ${where}`,
      [like],
    );
    return Number(r.rows[0]?.n ?? 0);
  }

  /** `POST users`: SPEC 5's username and password rules as sign-up; no e-mail code. */
  async create(
    admin: FleetUser,
    body: Partial<FleetUserCreate>,
    ip: string,
  ): Promise<FleetUserRow> {
    const form = {
      username: typeof body.username === 'string' ? body.username : '',
      email: typeof body.email === 'string' ? body.email.trim() : '',
      password: typeof body.password === 'string' ? body.password : '',
    };
    const all = validateCloudSignUp({
      ...form,
      password2: form.password,
      email_code: '000000',
      privacy: true,
      region: '-',
    });
    const fields: Partial<Record<string, FleetFieldError>> = {};
    for (const k of ['username', 'email', 'password'] as const) if (all[k]) fields[k] = all[k];
    if (form.email.length > 254 || !CLOUD_EMAIL_RE.test(form.email)) fields.email = 'email_invalid';
    const role = body.role ?? 'user';
    if (!ROLES.includes(role)) throw new ValidatorError('role must be admin or user');
    if (Object.keys(fields).length > 0) throw new CloudFormError(fields);
    const hash = await this.accounts.hash(ip, form.password);
    try {
      const r = await this.db.query<{ id: string }>(
        `INSERT INTO accounts (username, email, password_hash, region, role)
         VALUES ($1, $2, $3, (SELECT region FROM accounts WHERE id = $5), $4) RETURNING id`,
        [form.username, form.email, hash, role, admin.accountId],
      );
      return await this.row(r.rows[0]!.id);
    } catch (e) {
      const which = uniqueViolation(e);
      if (which === null) throw e;
      throw which.includes('username')
        ? new AccountExistsError({ username: 'username_taken' })
        : new AccountExistsError({ email: 'email_taken' });
    }
  }

  /** One user's row (404 when there is none). */
  async row(id: string): Promise<FleetUserRow> {
    if (!UUID_RE.test(id)) throw new NotFoundError('No such user');
    const r = await this.db.query<UserListRow>(
      `SELECT ${USER_COLUMNS} FROM accounts a WHERE a.id = $1`,
      [id],
    );
    if (!r.rows[0]) throw new NotFoundError('No such user');
    return userRow(r.rows[0]);
  }

  /**
   * `PATCH users/:id`: role, disabled, password. The last active admin keeps its role and stays
   * enabled (409). Disabling or a new password ends the account's sessions and trusted browsers.
   */
  async patch(id: string, body: Record<string, unknown>, ip: string): Promise<UserChange> {
    if (!UUID_RE.test(id)) throw new NotFoundError('No such user');
    const patch: FleetUserPatch = {};
    if (body.role !== undefined) {
      if (!ROLES.includes(body.role as FleetRole)) {
        throw new ValidatorError('role must be admin or user');
      }
      patch.role = body.role as FleetRole;
    }
    if (body.disabled !== undefined) {
      if (typeof body.disabled !== 'boolean')
        throw new ValidatorError('disabled must be a boolean');
      patch.disabled = body.disabled;
    }
    let hash: string | null = null;
    if (body.password !== undefined) {
      const pw = typeof body.password === 'string' ? body.password : '';
      const f = validateCloudSignUp({ password: pw, password2: pw });
      if (f.password) throw new CloudFormError({ password: f.password });
      hash = await this.accounts.hash(ip, pw);
    }
    const change = await inTransaction(this.db, async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [FIRST_ADMIN_LOCK]);
      const cur = (
        await c.query<{ username: string; role: FleetRole; disabled: boolean }>(
          `SELECT username, role, disabled_at IS NOT NULL AS disabled FROM accounts
           WHERE id = $1 FOR UPDATE`,
          [id],
        )
      ).rows[0];
      if (!cur) throw new NotFoundError('No such user');
      const losesAdmin =
        cur.role === 'admin' && !cur.disabled && (patch.role === 'user' || patch.disabled === true);
      if (losesAdmin) await this.keepAnAdmin(c, id);
      const changed: string[] = [];
      if (patch.role !== undefined && patch.role !== cur.role) changed.push('role');
      if (patch.disabled !== undefined && patch.disabled !== cur.disabled) changed.push('disabled');
      if (hash) changed.push('password');
      await c.query(
        `UPDATE accounts SET role = COALESCE($2, role),
           disabled_at = CASE WHEN $3::boolean IS NULL THEN disabled_at
                              WHEN $3 THEN COALESCE(disabled_at, now()) ELSE NULL END,
           password_hash = COALESCE($4, password_hash)
         WHERE id = $1`,
        [id, patch.role ?? null, patch.disabled ?? null, hash],
      );
      return { id, username: cur.username, changed };
    });
    if (patch.disabled === true || hash) await this.accounts.endAll(id);
    return change;
  }

  /** 409 unless another enabled admin than `id` exists (under the lock). */
  private async keepAnAdmin(c: Pick<Db, 'query'>, id: string): Promise<void> {
    const others = await c.query(
      `SELECT 1 FROM accounts WHERE role = 'admin' AND disabled_at IS NULL AND id <> $1 LIMIT 1`,
      [id],
    );
    if (!others.rowCount) {
      throw new ConflictStateError('The fleet needs an active admin: make another one first');
    }
  }

  /**
   * `DELETE users/:id`: not yourself, not the last admin, and not while it still has bound
   * devices (unbind or hand them over first: 409 says how many).
   */
  async remove(admin: FleetUser, id: string): Promise<UserChange> {
    if (!UUID_RE.test(id)) throw new NotFoundError('No such user');
    if (id === admin.accountId) throw new ConflictStateError('You cannot delete your own account');
    return inTransaction(this.db, async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [FIRST_ADMIN_LOCK]);
      const cur = (
        await c.query<{ username: string; role: FleetRole; devices: string }>(
          `SELECT username, role, (SELECT count(*) FROM devices d
             WHERE d.account_id = a.id AND d.revoked_at IS NULL) AS devices
           FROM accounts a WHERE id = $1 FOR UPDATE`,
          [id],
        )
      ).rows[0];
      if (!cur) throw new NotFoundError('No such user');
      if (cur.role === 'admin') await this.keepAnAdmin(c, id);
      const n = Number(cur.devices);
      if (n > 0) {
        throw new ConflictStateError(
          `This user still has ${n} bound device(s): unbind them first`,
          { devices: n },
        );
      }
      await c.query('DELETE FROM accounts WHERE id = $1', [id]);
      return { id, username: cur.username, changed: ['deleted'] };
    });
  }
}
