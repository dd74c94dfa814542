/** Migrations against a real PostgreSQL: replicas starting at once, a second start, a failure. */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresEngine } from '../../../scripts/cloud/engines.mjs';
import { migrate } from './migrate';
import { MIGRATIONS } from './migrations';
import { sweepExpired } from './sweep';

let engine: PostgresEngine;
beforeAll(async () => {
  engine = await startPostgres();
});
afterAll(() => engine?.stop());

function pool(): pg.Pool {
  const p = new pg.Pool({ connectionString: engine.url, max: 2 });
  // a client still closing when PostgreSQL stops (afterAll) hears its shutdown: not a failure
  p.on('error', () => {});
  return p;
}

describe('migrate', () => {
  it('four replicas migrating one fresh database at once: one applies, all succeed, each version once', async () => {
    const pools = [pool(), pool(), pool(), pool()];
    try {
      const results = await Promise.all(pools.map((p) => migrate(p)));
      const latest = Math.max(...MIGRATIONS.map((m) => m.version));
      expect(results.map((r) => r.version)).toEqual([latest, latest, latest, latest]);
      // exactly one of them applied the migrations
      expect(results.filter((r) => r.applied.length > 0)).toHaveLength(1);
      const rows = await pools[0]!.query<{ version: number }>(
        'SELECT version FROM schema_migrations ORDER BY version',
      );
      expect(rows.rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      const tables = await pools[0]!.query<{ tablename: string }>(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
      );
      // part 1's tables and migration 2's (later migrations add their own)
      expect(tables.rows.map((t) => t.tablename)).toEqual(
        expect.arrayContaining([
          'accounts',
          'bind_codes',
          'device_group_members',
          'device_groups',
          'devices',
          'email_codes',
          'events',
          'group_links',
          'schema_migrations',
          'sessions',
          'user_group_members',
          'user_groups',
        ]),
      );
      // a later start finds nothing to do
      expect((await migrate(pools[1]!)).applied).toEqual([]);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it('a failing migration leaves nothing half done', async () => {
    const p = pool();
    try {
      const broken = [
        ...MIGRATIONS,
        {
          version: 9001,
          name: 'half',
          sql: 'CREATE TABLE half_done (x int); SELECT nope FROM nowhere;',
        },
      ];
      await expect(migrate(p, undefined, broken)).rejects.toThrow(/nowhere/);
      const t = await p.query("SELECT 1 FROM pg_tables WHERE tablename = 'half_done'");
      expect(t.rowCount).toBe(0);
      const v = await p.query('SELECT 1 FROM schema_migrations WHERE version = 9001');
      expect(v.rowCount).toBe(0);
    } finally {
      await p.end();
    }
  });

  it('the sweep removes what expired and keeps what is live', async () => {
    const p = pool();
    try {
      await migrate(p);
      const acc = await p.query<{ id: string }>(
        `INSERT INTO accounts (username, email, password_hash, region)
         VALUES ('sweeper', 'sweeper@example.com', 'x', 'eu') RETURNING id`,
      );
      const id = acc.rows[0]!.id;
      await p.query(
        `INSERT INTO sessions (token_hash, account_id, expires_at) VALUES
         ('old', $1, now() - interval '1 minute'), ('live', $1, now() + interval '1 day')`,
        [id],
      );
      await p.query(
        `INSERT INTO events (kind, at) VALUES ('ancient', now() - interval '400 days'), ('recent', now())`,
      );
      await p.query(
        `INSERT INTO email_codes (email, code_hash, expires_at) VALUES
         ('a@x.io', 'h', now() - interval '2 days'), ('b@x.io', 'h', now() + interval '5 minutes')`,
      );
      await p.query(
        `INSERT INTO trusted_browsers (token_hash, account_id, expires_at) VALUES
         ('gone', $1, now() - interval '1 minute'), ('kept', $1, now() + interval '1 day')`,
        [id],
      );
      await p.query(
        `INSERT INTO oidc_states (state, browser_hash, nonce, verifier, next, expires_at) VALUES
         ('late', 'b', 'n', 'v', '/', now() - interval '1 minute'),
         ('fresh', 'b', 'n', 'v', '/', now() + interval '5 minutes')`,
      );
      await sweepExpired(p);
      const trusted = await p.query('SELECT token_hash FROM trusted_browsers');
      expect(trusted.rows).toEqual([{ token_hash: 'kept' }]);
      const states = await p.query('SELECT state FROM oidc_states');
      expect(states.rows).toEqual([{ state: 'fresh' }]);
      const sessions = await p.query('SELECT token_hash FROM sessions ORDER BY token_hash');
      expect(sessions.rows).toEqual([{ token_hash: 'live' }]);
      const events = await p.query('SELECT kind FROM events ORDER BY kind');
      expect(events.rows).toEqual([{ kind: 'recent' }]);
      const codes = await p.query('SELECT email FROM email_codes');
      expect(codes.rows).toEqual([{ email: 'b@x.io' }]);
    } finally {
      await p.end();
    }
  });
});
