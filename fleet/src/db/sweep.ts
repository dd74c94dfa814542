/**
 * What expires leaves the tables: sessions, sign-up codes, bind codes long past their use,
 * remembered browsers and OpenID Connect sign-ins past their time, and
 * events older than the log keeps (`events.keep_days`, default 90). Run at start and every few
 * hours by each replica (idempotent: replicas sweeping at once delete nothing twice).
 */
import { sweepAlerts } from '../alerts/alerts';
import { deleteOldEvents } from '../events/events';
import type { Db } from './pool';

export const EVENTS_KEEP_DAYS = 90;
export const SWEEP_EVERY_MS = 6 * 3600_000;

export async function sweepExpired(db: Db, eventsKeepDays = EVENTS_KEEP_DAYS): Promise<void> {
  await db.query('DELETE FROM sessions WHERE expires_at < now()');
  await db.query(`DELETE FROM email_codes WHERE expires_at < now() - interval '1 day'`);
  await db.query(`DELETE FROM bind_codes WHERE expires_at < now() - interval '1 hour'`);
  await db.query('DELETE FROM trusted_browsers WHERE expires_at < now()');
  await db.query('DELETE FROM oidc_states WHERE expires_at < now()');
  await deleteOldEvents(db, eventsKeepDays);
  await sweepAlerts(db, eventsKeepDays);
}
