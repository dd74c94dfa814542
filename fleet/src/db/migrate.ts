/**
 * Applies the missing migrations (migrations.ts) in one transaction under a transaction-level
 * advisory lock: replicas starting at once queue on the lock, the first applies, the others then
 * find nothing to do. A database newer than this replica (a version it does not know) is left
 * alone and said in the log.
 */
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { MIGRATIONS, type Migration } from './migrations';
import { inTransaction } from './pool';

/** pg_advisory_xact_lock key: "kvmfleet" as a number, fixed forever. */
export const MIGRATION_LOCK = 0x6b766d666c656574n;

export interface MigrateResult {
  applied: number[];
  version: number;
}

export async function migrate(
  pool: Pool,
  log?: Logger,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<MigrateResult> {
  const { applied, done } = await inTransaction(pool, async (c) => {
    await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK.toString()]);
    await c.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await c.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map(
        (r) => r.version,
      ),
    );
    const applied: number[] = [];
    for (const m of [...migrations].sort((x, y) => x.version - y.version)) {
      if (done.has(m.version)) continue;
      await c.query(m.sql);
      await c.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        m.version,
        m.name,
      ]);
      applied.push(m.version);
    }
    return { applied, done };
  });
  const known = Math.max(0, ...migrations.map((m) => m.version));
  const version = Math.max(known, ...done);
  if (version > known) {
    log?.warn({ version, known }, 'the database schema is newer than this replica knows');
  }
  if (applied.length > 0) log?.info({ applied }, 'database migrated');
  return { applied, version };
}
