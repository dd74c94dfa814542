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
