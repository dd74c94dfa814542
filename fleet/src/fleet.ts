/**
 * One fleet replica put together: the database (migrated), the bind notifications, accounts,
 * devices, the context the relay shares, and the Fastify app. `close()` undoes it all.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import pino, { type Logger } from 'pino';
import { Accounts, SESSION_COOKIE } from './accounts/accounts';
import { Alerts } from './alerts/alerts';
import { SmtpMailer, type Mailer } from './accounts/mailer';
import { buildFleetApp, type FleetAppOptions } from './app';
import type { FleetConfig, FleetContext, FleetUser } from './context';
import { migrate } from './db/migrate';
import { createPool, type Db } from './db/pool';
import { EVENTS_KEEP_DAYS, sweepExpired, SWEEP_EVERY_MS } from './db/sweep';
import { BindWaiters } from './devices/bind-waiters';
import { Devices } from './devices/devices';
import { ReplicaLiveness } from './devices/liveness';

export interface Fleet {
  app: FastifyInstance;
  ctx: FleetContext;
  db: Db;
  accounts: Accounts;
  devices: Devices;
  alerts: Alerts;
  /** The bind polls' PostgreSQL notifications (LISTEN connection). */
  waiters: BindWaiters;
  close(): Promise<void>;
}

export interface CreateFleetOptions extends FleetAppOptions {
  log?: Logger;
  mailer?: Mailer;
}

export async function createFleet(
  config: FleetConfig,
  opts: CreateFleetOptions = {},
): Promise<Fleet> {
  const log = opts.log ?? pino({ level: 'silent' });
  const db = createPool(config.database, log);
  const cleanups: (() => Promise<void> | void)[] = [() => db.end()];
  const close = async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => {});
  };
  try {
    await migrate(db, log);
    const waiters = new BindWaiters(config.database, log);
    cleanups.push(() => waiters.close());
    await waiters.start();
    const mailer = opts.mailer ?? new SmtpMailer(config.smtp);
    cleanups.push(() => mailer.close());
    const accounts = new Accounts(db, mailer, log, { issuer: 'KVM fleet' });
    const users = new WeakMap<FastifyRequest, Promise<FleetUser | null>>();
    const ctx: FleetContext = {
      config,
      log,
      devices: null as unknown as Devices,
      relay: null,
      userOf(req) {
        let u = users.get(req);
        if (!u) {
          u = accounts.userOfToken(req.cookies?.[SESSION_COOKIE]);
          users.set(req, u);
        }
        return u;
      },
    };
    const devices = new Devices({ db, config, log, waiters, relay: () => ctx.relay });
    ctx.devices = devices;
    await devices.clearPresence();
    const keepDays = config.events?.keep_days ?? EVENTS_KEEP_DAYS;
    await sweepExpired(db, keepDays);
    const sweeper = setInterval(() => {
      sweepExpired(db, keepDays).catch((err: unknown) => log.warn({ err }, 'sweep failed'));
    }, SWEEP_EVERY_MS);
    sweeper.unref();
    cleanups.push(() => clearInterval(sweeper));
    const alerts = new Alerts({ db, mailer, log, config });
    alerts.start();
    cleanups.push(() => alerts.close());
    const app = await buildFleetApp(ctx, { accounts, devices, db, alerts }, opts);
    const liveness = new ReplicaLiveness({
      db,
      log,
      replica: config.replica,
      url: config.publicUrl,
      held: () => ctx.relay?.held?.() ?? [],
      claim: (id) => devices.setPresence(id, config.replica),
    });
    await liveness.start();
    cleanups.push(() => liveness.close());
    // the app first: its sockets close before the database goes; held polls answer at once
    cleanups.push(() => app.close());
    cleanups.push(() => devices.close());
    return { app, ctx, db, accounts, devices, alerts, waiters, close };
  } catch (e) {
    await close();
    throw e;
  }
}
