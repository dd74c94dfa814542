/**
 * OpenID Connect sign-in end to end against a real provider (npm `oidc-provider` on loopback,
 * test-provider.ts) and a real PostgreSQL: start → the provider's sign-in and consent → the
 * callback signs in (a new account, or the same one again), with every refusal sent back as a
 * bare code.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetAuthOptions, FleetMe, FleetUserRow } from '@kvm/protocol';
import { parseConfig } from '../config';
import {
  HOST,
  api,
  failure,
  result,
  signIn,
  signUpAndIn,
  sql,
  startKit,
  type Kit,
} from '../test-kit';
import { OIDC_COOKIE, Oidc, OidcError, safeNextPath, usernameFrom } from './oidc';
import { driveOidcLogin, startOidcProvider, type OidcTestProvider } from './test-provider';

const CALLBACK = `https://${HOST}/cloud-basic/v1/oidc/callback`;
let idp: OidcTestProvider;
let kit: Kit;
let admin: string;

const USERS = [
  { sub: 'sub-ann', password: 'ann-pw', email: 'ann@corp.example', preferred_username: 'Ann Lee!' },
  { sub: 'sub-ann2', password: 'ann-pw', email: 'ann2@corp.example', preferred_username: 'annlee' },
  {
    sub: 'sub-boss',
    password: 'boss-pw',
    email: 'boss@corp.example',
    preferred_username: 'boss',
    extra: { groups: ['staff', 'fleet-admins'] },
  },
  { sub: 'sub-nomail', password: 'x-pw', name: 'Zoë' },
  { sub: 'sub-late', password: 'late-pw', email: 'late@corp.example' },
];

beforeAll(async () => {
  idp = await startOidcProvider({ users: USERS, redirectUris: [CALLBACK] });
  kit = await startKit({
    config: {
      oidc: {
        issuer: idp.issuer,
        client_id: idp.clientId,
        client_secret: idp.clientSecret,
        name: 'Corp SSO',
        admin_claim: { name: 'groups', value: 'fleet-admins' },
      },
    },
  });
  admin = (await signUpAndIn(kit, 'oadmin')).cookie;
}, 60_000);
afterAll(async () => {
  await kit?.close();
  await idp?.stop();
});

function cookieOf(r: LightMyRequestResponse, name: string): string | undefined {
  return r.cookies.find((c) => c.name === name)?.value;
}

/** GET on the fleet with optional cookies. */
function get(path: string, cookies: Record<string, string> = {}) {
  return kit.app.inject({
    method: 'GET',
    url: path,
    headers: {
      host: HOST,
      cookie: Object.entries(cookies)
        .map(([k, v]) => `${k}=${v}`)
        .join('; '),
    },
  });
}

/** The whole sign-in: start, the provider's pages, the callback. Answers the callback's reply. */
async function oidcSignIn(
  who: { sub: string; password: string },
  opts: { next?: string; cancel?: boolean } = {},
): Promise<LightMyRequestResponse> {
  const start = await get(
    `/cloud-basic/v1/oidc/start${opts.next !== undefined ? `?next=${encodeURIComponent(opts.next)}` : ''}`,
  );
  expect(start.statusCode, start.body).toBe(302);
  const browser = cookieOf(start, OIDC_COOKIE)!;
  expect(browser).toMatch(/^[0-9a-f]{64}$/);
  const back = await driveOidcLogin(start.headers.location as string, who, opts);
  const u = new URL(back);
  expect(u.origin + u.pathname).toBe(CALLBACK);
  return get(u.pathname + u.search, { [OIDC_COOKIE]: browser });
}

async function meOf(r: LightMyRequestResponse): Promise<FleetMe> {
  const session = cookieOf(r, 'fleet_session');
  expect(session, `${r.statusCode} ${String(r.headers.location)}`).toBeDefined();
  return result<FleetMe>(await api(kit, 'GET', '/me', undefined, { cookie: session! }));
}

describe('OpenID Connect sign-in', () => {
  it('auth/options names the provider; start sends the browser there with PKCE, state and nonce', async () => {
    const o = result<FleetAuthOptions>(await api(kit, 'GET', '/auth/options'));
    expect(o).toEqual({ signup: true, oidc: { name: 'Corp SSO' } });
    const start = await get('/cloud-basic/v1/oidc/start?next=/d/dev1/');
    expect(start.statusCode).toBe(302);
    const to = new URL(start.headers.location as string);
    expect(to.origin).toBe(idp.issuer);
    expect(to.searchParams.get('client_id')).toBe(idp.clientId);
    expect(to.searchParams.get('redirect_uri')).toBe(CALLBACK);
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
    expect(to.searchParams.get('scope')).toBe('openid email profile');
    for (const k of ['state', 'nonce', 'code_challenge']) {
      expect(to.searchParams.get(k)).toMatch(/^[\w-]{20,}$/);
    }
    const c = start.cookies.find((x) => x.name === OIDC_COOKIE)!;
    expect(c).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax' });
    // kept server-side: one row, not the browser's value
    const rows = await sql<{ browser_hash: string; next: string }>(
      kit,
      'SELECT browser_hash, next FROM oidc_states WHERE state = $1',
      [to.searchParams.get('state')],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.browser_hash).not.toBe(c.value);
    expect(rows[0]!.next).toBe('/d/dev1/');
  });

  it('signs a new provider user in with a new account, then the same account again', async () => {
    const r = await oidcSignIn(USERS[0]!, { next: '/d/dev7/' });
    expect(r.statusCode).toBe(302);
    expect(r.headers.location).toBe('/d/dev7/');
    expect(cookieOf(r, OIDC_COOKIE)).toBe('');
    const me = await meOf(r);
    expect(me).toMatchObject({
      username: 'AnnLee',
      email: 'ann@corp.example',
      role: 'user',
      oidc_issuer: idp.issuer,
    });
    const again = await meOf(await oidcSignIn(USERS[0]!));
    expect(again.id).toBe(me.id);
    const ev = await sql<{ detail: { method: string } }>(
      kit,
      `SELECT detail FROM events WHERE kind = 'login' AND account_id = $1`,
      [me.id],
    );
    expect(ev.map((e) => e.detail.method)).toEqual(['oidc', 'oidc']);
    // the admin's list shows it as an OIDC account
    const row = result<{ users: FleetUserRow[] }>(
      await api(kit, 'GET', '/users?q=annlee', undefined, { cookie: admin }),
    ).users.find((u) => u.id === me.id)!;
    expect(row.oidc).toBe(true);
  });

  it('a taken username gets digits; no e-mail claim gets a placeholder; admin_claim makes an admin', async () => {
    const ann2 = await meOf(await oidcSignIn(USERS[1]!));
    expect(ann2.username).toMatch(/^annlee\d{2,}$/);
    const boss = await meOf(await oidcSignIn(USERS[2]!));
    expect(boss.role).toBe('admin');
    const nomail = await meOf(await oidcSignIn(USERS[3]!));
    expect(nomail.username).toBe('Zoe00');
    expect(nomail.email).toMatch(/^[0-9a-f]{24}@oidc\.invalid$/);
  });

  it('an OIDC account has no password until an admin sets one', async () => {
    const me = await meOf(await oidcSignIn(USERS[0]!));
    const r = failure(
      await api(kit, 'POST', '/login', { username: me.username, password: 'ann-pw' }),
    );
    expect([r.status, r.error]).toEqual([401, 'InvalidCredentialsError']);
    result(await api(kit, 'PATCH', `/users/${me.id}`, { password: 'set123' }, { cookie: admin }));
    await signIn(kit, me.username, 'set123');
  });

  it('refusals come back as a bare code: disabled, cancelled, replayed, another browser', async () => {
    const bare = /^\/\?oidc_error=[a-z_]+#signin$/;
    // disabled
    const me = await meOf(await oidcSignIn(USERS[1]!));
    result(await api(kit, 'PATCH', `/users/${me.id}`, { disabled: true }, { cookie: admin }));
    const dis = await oidcSignIn(USERS[1]!);
    expect(dis.headers.location).toBe('/?oidc_error=disabled#signin');
    expect(cookieOf(dis, 'fleet_session')).toBeUndefined();
    // cancelled at the provider
    const cancel = await oidcSignIn(USERS[0]!, { cancel: true });
    expect(cancel.headers.location).toBe('/?oidc_error=denied#signin');

    // a callback is good once, and only in the browser that started it
    const start = await get('/cloud-basic/v1/oidc/start');
    const browser = cookieOf(start, OIDC_COOKIE)!;
    const back = new URL(await driveOidcLogin(start.headers.location as string, USERS[0]!));
    const path = back.pathname + back.search;
    const elsewhere = await get(path, { [OIDC_COOKIE]: 'a'.repeat(64) });
    expect(elsewhere.headers.location).toBe('/?oidc_error=state#signin');
    // ... and that attempt spent it
    const replay = await get(path, { [OIDC_COOKIE]: browser });
    expect(replay.headers.location).toBe('/?oidc_error=state#signin');
    // a forged code with a live state: the provider refuses it, no text of it in the URL
    const s2 = await get('/cloud-basic/v1/oidc/start');
    const state = new URL(s2.headers.location as string).searchParams.get('state')!;
    const forged = await get(
      `/cloud-basic/v1/oidc/callback?code=forged&state=${state}&iss=${encodeURIComponent(idp.issuer)}`,
      { [OIDC_COOKIE]: cookieOf(s2, OIDC_COOKIE)! },
    );
    expect(forged.headers.location).toBe('/?oidc_error=provider#signin');
    for (const r of [dis, cancel, elsewhere, replay, forged]) {
      expect(r.headers.location).toMatch(bare);
    }
    // an expired state
    const s3 = await get('/cloud-basic/v1/oidc/start');
    await sql(kit, `UPDATE oidc_states SET expires_at = now() - interval '1 s'`);
    const late = new URL(await driveOidcLogin(s3.headers.location as string, USERS[0]!));
    expect(
      (await get(late.pathname + late.search, { [OIDC_COOKIE]: cookieOf(s3, OIDC_COOKIE)! }))
        .headers.location,
    ).toBe('/?oidc_error=state#signin');
  });

  it('with create_users off, a provider user the fleet does not know is refused', async () => {
    const strict = new Oidc({ ...kit.config.oidc!, create_users: false }, kit.fleet.accounts);
    const known = await strict.start('/', '192.0.2.50');
    const back = new URL(await driveOidcLogin(known.url, USERS[0]!));
    await expect(strict.callback(back.search.slice(1), known.browser)).resolves.toMatchObject({
      created: false,
    });
    const fresh = await strict.start('/', '192.0.2.50');
    const back2 = new URL(await driveOidcLogin(fresh.url, USERS[4]!));
    await expect(strict.callback(back2.search.slice(1), fresh.browser)).rejects.toMatchObject({
      code: 'no_account',
    });
  });
});

describe('helpers', () => {
  it('config: issuer https (http only on loopback), scopes with openid, the callback by default', () => {
    const base = { database: 'postgres://x@127.0.0.1/db', publicUrl: 'https://f.example' };
    const oidc = { issuer: 'https://idp.example', client_id: 'c', client_secret: 's' };
    expect(parseConfig({ ...base, oidc }).oidc).toEqual({
      ...oidc,
      name: 'OpenID Connect',
      scopes: ['openid', 'email', 'profile'],
      redirect_uri: 'https://f.example/cloud-basic/v1/oidc/callback',
      create_users: true,
      admin_claim: null,
    });
    expect(parseConfig(base).oidc).toBeNull();
    expect(() => parseConfig({ ...base, oidc: { ...oidc, issuer: 'http://idp.example' } })).toThrow(
      /oidc\.issuer: http only on loopback/,
    );
    expect(() => parseConfig({ ...base, oidc: { ...oidc, scopes: ['email'] } })).toThrow(
      /oidc\.scopes/,
    );
  });

  it('next is a path of this site, else /', () => {
    expect(safeNextPath('/d/dev1/?x=1#y')).toBe('/d/dev1/?x=1#y');
    for (const bad of [
      '//evil.example/',
      '/\\evil.example',
      'https://evil.example/',
      '/\t/evil',
      'x',
      '',
      5,
    ]) {
      expect(safeNextPath(bad), String(bad)).toBe('/');
    }
    expect(safeNextPath(`/${'a'.repeat(2000)}`)).toBe('/');
  });

  it('usernames follow SPEC 5 (5-15 of letters, digits, _ . -; a letter or digit first)', () => {
    expect(usernameFrom({ preferred_username: 'Ann Lee!' })).toBe('AnnLee');
    expect(usernameFrom({ email: '.x@y.z' })).toBe('x0000');
    expect(usernameFrom({ preferred_username: 'a-very-long-username-indeed' })).toBe(
      'a-very-long-use',
    );
    expect(usernameFrom({ preferred_username: 'a-very-long-username-indeed' }, '123')).toBe(
      'a-very-long-123',
    );
    expect(usernameFrom({})).toBe('user0');
    expect(new OidcError('state').code).toBe('state');
  });
});
