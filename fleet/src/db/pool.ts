/**
 * The PostgreSQL pool of a replica: bounded connections, statements bounded in time, and the
 * pool's idle-client errors logged instead of crashing the process (a PostgreSQL restart
 * drops them; the next query gets a fresh connection).
 */
import pg from 'pg';
import type { Logger } from 'pino';

export type Db = pg.Pool;

export function createPool(connectionString: string, log?: Logger, max = 10): Db {
  const pool = new pg.Pool({
    connectionString,
    max,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    statement_timeout: 15_000,
    application_name: 'kvm-fleet',
  });
  pool.on('error', (err) => log?.warn({ err: err.message }, 'database connection lost'));
  return pool;
}

/** Runs `fn` in a transaction; rolls back when it throws. */
export async function inTransaction<T>(db: Db, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await db.connect();
  try {
    await c.query('BEGIN');
    const out = await fn(c);
    await c.query('COMMIT');
    return out;
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    c.release();
  }
}

/** PostgreSQL's unique_violation, and on which constraint. */
export function uniqueViolation(e: unknown): string | null {
  const err = e as { code?: string; constraint?: string };
  return err.code === '23505' ? (err.constraint ?? '') : null;
}

/**
 * The database cannot be reached now (down, restarting, starting, the pool's connect timed out):
 * the client should try again shortly, 503, not the 500 of a bug.
 */
export function dbUnavailable(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown };
  const code = typeof err.code === 'string' ? err.code : '';
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND'].includes(code)) return true;
  // SQLSTATE 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, starting up
  if (/^08...$/.test(code) || /^57P0[123]$/.test(code)) return true;
  const message = typeof err.message === 'string' ? err.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Client was closed|Connection refused/i.test(
    message,
  );
}
