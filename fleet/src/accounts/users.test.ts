/**
 * Roles and the admin's users API against a real PostgreSQL: `GET me` answers FleetMe, disabled
 * accounts cannot sign in and lose their sessions, users are listed, made, changed and deleted
 * (the fleet keeps an active admin), and each of it is in the event log with who did it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetMe, FleetUserPage, FleetUserRow } from '@kvm/protocol';
import {
  api,
  bindByCode,
  failure,
  result,
  signIn,
  signUpAndIn,
  sql,
  startKit,
  type Kit,
} from '../test-kit';

let kit: Kit;
let admin: string;
let ip = 0;
/** A fresh client address per call that may fail (the per-address login limit is 10 a minute). */
const nextIp = () => `203.0.113.${(ip += 1) % 250}`;

beforeAll(async () => {
  kit = await startKit();
  // the fleet's first account is its admin
  admin = (await signUpAndIn(kit, 'admin1', 'secret12')).cookie;
});
afterAll(() => kit?.close());

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a test reads the JSON as it is
type Detail = Record<string, any>;

async function events(kind: string): Promise<Array<{ actor: string | null; detail: Detail }>> {
  return sql(kit, 'SELECT actor, detail FROM events WHERE kind = $1 ORDER BY id', [kind]);
}

/** `POST /users` as the admin. */
function postUser(body: Record<string, unknown>) {
  return api(kit, 'POST', '/users', body, { cookie: admin });
}

async function makeUser(username: string, role: 'admin' | 'user' = 'user'): Promise<FleetUserRow> {
  return result<FleetUserRow>(
    await postUser({ username, email: `${username}@example.org`, password: 'pass123', role }),
  );
}

describe('roles and GET me', () => {
  it('me answers FleetMe: id, role, oidc_issuer, created_at in ms', async () => {
    const me = result<FleetMe>(await api(kit, 'GET', '/me', undefined, { cookie: admin }));
    expect(me).toMatchObject({ username: 'admin1', role: 'admin', oidc_issuer: null });
    expect(me.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(typeof me.created_at).toBe('number');
    const { cookie } = await signUpAndIn(kit, 'second1');
    const you = result<FleetMe>(await api(kit, 'GET', '/me', undefined, { cookie }));
    expect(you.role).toBe('user');
    // a user is refused the admin's API
    const r = failure(await api(kit, 'GET', '/users', undefined, { cookie }));
    expect([r.status, r.error]).toEqual([403, 'AdminRequiredError']);
  });

  it('a disabled account cannot log in (as a wrong password) and its sessions end', async () => {
    const u = await makeUser('dis_user');
    const cookie = await signIn(kit, 'dis_user', 'pass123');
    expect((await api(kit, 'GET', '/me', undefined, { cookie })).statusCode).toBe(200);
    const p = await api(kit, 'PATCH', `/users/${u.id}`, { disabled: true }, { cookie: admin });
    expect(result<FleetUserRow>(p).disabled).toBe(true);
    expect(failure(await api(kit, 'GET', '/me', undefined, { cookie })).status).toBe(401);
    const wrong = failure(
      await api(
        kit,
        'POST',
        '/login',
        { username: 'dis_user', password: 'nope123' },
        { ip: nextIp() },
      ),
    );
    const refused = failure(
      await api(
        kit,
        'POST',
        '/login',
        { username: 'dis_user', password: 'pass123' },
        { ip: nextIp() },
      ),
    );
    expect(refused).toEqual(wrong);
    expect([refused.status, refused.error]).toEqual([401, 'InvalidCredentialsError']);
    // the log says why; never the password
    const failed = await events('login_failed');
    expect(failed.map((e) => e.detail.reason)).toEqual(
      expect.arrayContaining(['password', 'disabled']),
    );
    expect(JSON.stringify(failed)).not.toContain('pass123');
    expect(JSON.stringify(failed)).not.toContain('nope123');
    // enabled again, it signs in
    await api(kit, 'PATCH', `/users/${u.id}`, { disabled: false }, { cookie: admin });
    await signIn(kit, 'dis_user', 'pass123');
    const changed = await events('user_changed');
    expect(changed.at(-1)).toMatchObject({ actor: 'admin1', detail: { changed: ['disabled'] } });
  });

  it('a login the rate limit refuses writes nothing to the log (a flood stays in memory)', async () => {
    const count = async () =>
      (await sql(kit, `SELECT 1 FROM events WHERE kind = 'login_failed'`)).length;
    const before = await count();
    const from = '198.18.99.1';
    const tries: number[] = [];
    for (let i = 0; i < 12; i += 1) {
      const r = await api(
        kit,
        'POST',
        '/login',
        { username: 'admin1', password: 'wrong12' },
        { ip: from },
      );
      tries.push(r.statusCode);
    }
    expect(tries.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(tries.slice(10)).toEqual([429, 429]);
    expect((await count()) - before).toBe(10);
  }, 60_000);

  it('login and logout are logged with the account and the method', async () => {
    const cookie = await signIn(kit, 'admin1', 'secret12');
    await api(kit, 'POST', '/logout', {}, { cookie });
    const rows = await sql<{ kind: string; actor: string; detail: Detail }>(
      kit,
      `SELECT e.kind, e.actor, e.detail FROM events e JOIN accounts a ON a.id = e.account_id
       WHERE a.username = 'admin1' AND e.kind IN ('login', 'logout') ORDER BY e.id DESC LIMIT 2`,
    );
    expect(rows.map((r) => r.kind)).toEqual(['logout', 'login']);
    expect(rows[1]!.detail.method).toBe('password');
    expect(rows[1]!.actor).toBe('admin1');
  });
});

describe('users API (admin)', () => {
  it('creates users with SPEC 5 rules, unique username and e-mail, no e-mail code', async () => {
    const bad = failure(await postUser({ username: '_x', email: 'nope', password: '12' }));
    expect(bad.status).toBe(400);
    expect(bad.fields).toEqual({
      username: 'username_invalid',
      email: 'email_invalid',
      password: 'password_length',
    });
    const made = await makeUser('made_one');
    expect(made).toMatchObject({ role: 'user', disabled: false, oidc: false, groups: [] });
    await signIn(kit, 'made_one', 'pass123');
    const dupName = failure(
      await postUser({ username: 'MADE_ONE', email: 'x1@example.org', password: 'pass123' }),
    );
    expect([dupName.status, dupName.fields]).toEqual([409, { username: 'username_taken' }]);
    const dupMail = failure(
      await postUser({ username: 'made_two', email: 'MADE_ONE@example.org', password: 'pass123' }),
    );
    expect([dupMail.status, dupMail.fields]).toEqual([409, { email: 'email_taken' }]);
    expect((await events('user_created')).at(-1)).toMatchObject({
      actor: 'admin1',
      detail: { username: 'made_one', role: 'user' },
    });
  });

  it('lists by username with q, limit and a cursor', async () => {
    for (const n of ['pg_a1', 'pg_b2', 'pg_c3', 'pg_d4', 'pg_e5']) await makeUser(n);
    const seen: string[] = [];
    let cursor = '';
    for (let i = 0; i < 5; i += 1) {
      const page = result<FleetUserPage>(
        await api(kit, 'GET', `/users?q=PG_&limit=2&cursor=${cursor}`, undefined, {
          cookie: admin,
        }),
      );
      expect(page.total).toBe(5);
      seen.push(...page.users.map((u) => u.username));
      if (!page.next) break;
      cursor = page.next;
    }
    expect(seen).toEqual(['pg_a1', 'pg_b2', 'pg_c3', 'pg_d4', 'pg_e5']);
    // q by e-mail; '_' is literal, not a wildcard
    const byMail = result<FleetUserPage>(
      await api(kit, 'GET', '/users?q=pg_c3%40example', undefined, { cookie: admin }),
    );
    expect(byMail.users.map((u) => u.username)).toEqual(['pg_c3']);
    for (const q of ['limit=0', 'limit=201', 'cursor=zzz', `q=${'x'.repeat(65)}`]) {
      expect(
        failure(await api(kit, 'GET', `/users?${q}`, undefined, { cookie: admin })).status,
        q,
      ).toBe(400);
    }
  });

  it('keeps an active admin: the last one cannot be demoted, disabled or deleted', async () => {
    const me = result<FleetMe>(await api(kit, 'GET', '/me', undefined, { cookie: admin }));
    for (const body of [{ role: 'user' }, { disabled: true }]) {
      const r = failure(await api(kit, 'PATCH', `/users/${me.id}`, body, { cookie: admin }));
      expect([r.status, r.error]).toEqual([409, 'ConflictStateError']);
    }
    const self = failure(await api(kit, 'DELETE', `/users/${me.id}`, undefined, { cookie: admin }));
    expect(self.status).toBe(409);
    // with a second admin, the first may step down
    const other = await makeUser('admin_two', 'admin');
    const otherCookie = await signIn(kit, 'admin_two', 'pass123');
    const down = result<FleetUserRow>(
      await api(kit, 'PATCH', `/users/${me.id}`, { role: 'user' }, { cookie: admin }),
    );
    expect(down.role).toBe('user');
    // the role is read per request: the old admin is a user at once
    expect(failure(await api(kit, 'GET', '/users', undefined, { cookie: admin })).status).toBe(403);
    // and now admin_two is the last one
    const last = failure(
      await api(kit, 'PATCH', `/users/${other.id}`, { disabled: true }, { cookie: otherCookie }),
    );
    expect(last.status).toBe(409);
    result(await api(kit, 'PATCH', `/users/${me.id}`, { role: 'admin' }, { cookie: otherCookie }));
    expect((await api(kit, 'GET', '/users', undefined, { cookie: admin })).statusCode).toBe(200);
  });

  it('a new password ends the sessions; the old one no longer signs in', async () => {
    const u = await makeUser('pw_change');
    const cookie = await signIn(kit, 'pw_change', 'pass123');
    const bad = failure(
      await api(kit, 'PATCH', `/users/${u.id}`, { password: '1' }, { cookie: admin }),
    );
    expect(bad.fields).toEqual({ password: 'password_length' });
    result(await api(kit, 'PATCH', `/users/${u.id}`, { password: 'newpass1' }, { cookie: admin }));
    expect(failure(await api(kit, 'GET', '/me', undefined, { cookie })).status).toBe(401);
    expect(
      failure(
        await api(
          kit,
          'POST',
          '/login',
          { username: 'pw_change', password: 'pass123' },
          { ip: nextIp() },
        ),
      ).status,
    ).toBe(401);
    await signIn(kit, 'pw_change', 'newpass1');
    const changed = (await events('user_changed')).at(-1)!;
    expect(changed.detail.changed).toEqual(['password']);
    expect(JSON.stringify(changed)).not.toContain('newpass1');
  });

  it('deletes a user, but not while it still has bound devices', async () => {
    const u = await makeUser('has_dev');
    const cookie = await signIn(kit, 'has_dev', 'pass123');
    const bound = await bindByCode(kit, cookie);
    const held = failure(await api(kit, 'DELETE', `/users/${u.id}`, undefined, { cookie: admin }));
    expect([held.status, held.devices]).toEqual([409, 1]);
    result(await api(kit, 'DELETE', `/devices/${bound.device_id}`, undefined, { cookie }));
    result(await api(kit, 'DELETE', `/users/${u.id}`, undefined, { cookie: admin }));
    expect(failure(await api(kit, 'GET', '/me', undefined, { cookie })).status).toBe(401);
    const gone = failure(await api(kit, 'DELETE', `/users/${u.id}`, undefined, { cookie: admin }));
    expect(gone.status).toBe(404);
    expect(
      failure(await api(kit, 'PATCH', '/users/not-a-uuid', {}, { cookie: admin })).status,
    ).toBe(404);
    expect((await events('user_deleted')).at(-1)).toMatchObject({
      actor: 'admin1',
      detail: { username: 'has_dev' },
    });
  });
});
