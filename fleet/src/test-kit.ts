/**
 * For the fleet's tests: a real PostgreSQL and SMTP sink (scripts/cloud/engines.mjs), a fleet
 * core on them (app.inject, no relay unless asked), and the steps most tests take (sign up,
 * sign in, a device identity).
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type pg from 'pg';
import { totp } from '../../server/src/services/auth/totp';
import {
  startPostgres,
  startSmtpSink,
  type PostgresEngine,
  type SmtpSink,
} from '../../scripts/cloud/engines.mjs';
import { signUpByMailCode } from '../../scripts/cloud/signup.mjs';
import { SESSION_COOKIE } from './accounts/accounts';
import { SmtpMailer } from './accounts/mailer';
import { parseConfig } from './config';
import type { DeviceRelay, FleetConfig } from './context';
import { createFleet, type Fleet } from './fleet';
import type { BindCodeAnswer, BindResult, DeviceIdentity } from '@kvm/protocol';

export const HOST = 'fleet.test:8443';

export interface Kit {
  pg: PostgresEngine;
  sink: SmtpSink;
  config: FleetConfig;
  fleet: Fleet;
  app: FastifyInstance;
  /** Notifications the fake relay got. */
  unbound: string[];
  close(): Promise<void>;
}

/** A PostgreSQL (temporary folder) and SMTP sink of its own per kit: test files share nothing. */
export async function startKit(
  opts: {
    relay?: boolean;
    postgres?: PostgresEngine;
    /** Config keys added (`alerts`, `events`...). */
    config?: Record<string, unknown>;
  } = {},
): Promise<Kit> {
  const pgEngine = opts.postgres ?? (await startPostgres());
  const sink = await startSmtpSink();
  const config = parseConfig({
    replica: 'fleet-test',
    publicUrl: `https://${HOST}`,
    database: pgEngine.url,
    smtp: { host: sink.host, port: sink.port, from: 'fleet@fleet.test' },
    data: '/nonexistent',
    ...opts.config,
  });
  const fleet = await createFleet(config, {
    relay: opts.relay ?? false,
    mailer: new SmtpMailer(config.smtp),
  });
  const unbound: string[] = [];
  if (!opts.relay) {
    const relay: DeviceRelay = {
      notifyUnbound: async (id) => {
        unbound.push(id);
      },
      online: async () => false,
      turnFor: () => null,
    };
    fleet.ctx.relay = relay;
  }
  return {
    pg: pgEngine,
    sink,
    config,
    fleet,
    app: fleet.app,
    unbound,
    async close() {
      await fleet.close();
      await sink.stop();
      if (!opts.postgres) await pgEngine.stop();
    },
  };
}

/** A direct client of the kit's database (for setting up states the clock would take). */
export async function sql<T extends pg.QueryResultRow>(
  kit: Kit,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  return (await kit.fleet.db.query<T>(text, values)).rows;
}

/** The id of the account named `username` (it must exist). */
export async function accountIdOf(kit: Kit, username: string): Promise<string> {
  const [row] = await sql<{ id: string }>(kit, 'SELECT id FROM accounts WHERE username = $1', [
    username,
  ]);
  if (!row) throw new Error(`no account ${username}`);
  return row.id;
}

/** An API call as a browser on the fleet's own origin (or as a device: `device: true`). */
export function api(
  kit: Kit,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  opts: { cookie?: string; device?: boolean; headers?: Record<string, string>; ip?: string } = {},
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { host: HOST, ...(opts.headers ?? {}) };
  if (!opts.device && method !== 'GET') headers.origin ??= `https://${HOST}`;
  if (opts.cookie) {
    headers.cookie = [`${SESSION_COOKIE}=${opts.cookie}`, headers.cookie]
      .filter(Boolean)
      .join('; ');
  }
  if (body !== undefined) headers['content-type'] = 'application/json';
  return kit.app.inject({
    method,
    url: `/cloud-basic/v1${path}`,
    headers,
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    remoteAddress: opts.ip ?? '192.0.2.10',
  });
}

let serial = 0;

/** Signs up `username` (e-mail code through the sink) and signs in: the session cookie. */
export async function signUpAndIn(
  kit: Kit,
  username: string,
  password = 'secret12',
  ip = `198.51.100.${(serial += 1) % 250}`,
): Promise<{ cookie: string; email: string }> {
  const email = `${username.toLowerCase()}@example.com`;
  await signUpByMailCode(
    async (path, body) => {
      const r = await api(kit, 'POST', `/${path}`, body, { ip });
      return { status: r.statusCode, text: r.body };
    },
    (to) => kit.sink.waitFor(to, 10_000),
    { username, email, password },
  );
  return { cookie: await signIn(kit, username, password, undefined, ip), email };
}

export async function signIn(
  kit: Kit,
  username: string,
  password: string,
  totpSecret?: string,
  ip?: string,
): Promise<string> {
  const r = await api(
    kit,
    'POST',
    '/login',
    { username, password, ...(totpSecret ? { totp: totp(totpSecret) } : {}) },
    { ...(ip ? { ip } : {}) },
  );
  const c = r.cookies.find((x) => x.name === SESSION_COOKIE);
  if (r.statusCode !== 200 || !c) throw new Error(`login: ${r.statusCode} ${r.body}`);
  return c.value;
}

let macSeq = 0;

export function identity(over: Partial<DeviceIdentity> = {}): DeviceIdentity {
  macSeq += 1;
  const b = macSeq.toString(16).padStart(4, '0');
  return {
    mac: `02:00:00:00:${b.slice(0, 2)}:${b.slice(2)}`,
    serial: `SN-${macSeq}`,
    name: `kvm-${macSeq}`,
    model: 'test-kvm',
    version: '1.0.0',
    ...over,
  };
}

/** The result of a kvmd envelope (throws with the body when not ok). */
export function result<T>(r: LightMyRequestResponse): T {
  const j = r.json() as { ok: boolean; result: T };
  if (!j.ok) throw new Error(`${r.statusCode} ${r.body}`);
  return j.result;
}

/** The error of a kvmd envelope. */
export function failure(r: LightMyRequestResponse): {
  status: number;
  error: string;
  error_msg: string;
  [k: string]: unknown;
} {
  const j = r.json() as { ok: boolean; result: { error: string; error_msg: string } };
  if (j.ok !== false) throw new Error(`expected an error, got ${r.statusCode} ${r.body}`);
  return { status: r.statusCode, ...j.result };
}

/**
 * Binds a device by code as a device and the account's browser do: code, the device's poll
 * held, the account's claim, the binding the poll returns.
 */
export async function bindByCode(
  kit: Kit,
  cookie: string,
  who: DeviceIdentity = identity(),
  claimer: Kit = kit,
): Promise<BindResult> {
  const code = result<BindCodeAnswer>(
    await api(kit, 'POST', '/bind/codes', { device: who }, { device: true }),
  );
  const held = api(kit, 'POST', '/bind/poll', { claim_token: code.claim_token }, { device: true });
  result(await api(claimer, 'POST', '/devices/claim', { code: code.code }, { cookie }));
  return result<BindResult>(await held);
}
