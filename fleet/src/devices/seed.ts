/**
 * Many devices at once for the search tests and the bench's `device_list_p95_ms`: rows inserted
 * straight into the table (one statement), offline, with secrets nobody holds. Not for a fleet
 * in use: they are devices no agent can ever connect as.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/pool';

export interface SeedOptions {
  /** The names' prefix (default `seed`): `<prefix>-00042`. */
  prefix?: string;
  /** The first number (default 1): seeding twice with other starts gives other names and MACs. */
  start?: number;
}

/**
 * Binds `n` made-up devices to the account: names `<prefix>-<n, 5 digits>`, MACs
 * `02:5e:<prefix hash>:<n>`, serials `SEED-<prefix>-<n>`, a model out of four and a version
 * out of three. Answers their ids.
 */
export async function seedDevices(
  db: Db,
  accountId: string,
  n: number,
  opts: SeedOptions = {},
): Promise<string[]> {
  const prefix = opts.prefix ?? 'seed';
  const start = opts.start ?? 1;
  const r = await db.query<{ id: string }>(
    `INSERT INTO devices (id, account_id, name, mac, serial, model, version, secret_hash)
     SELECT
       -- 16 base32 characters (the id alphabet, a-z and 2-7) from md5 of a random salt and i
       (SELECT string_agg(substr('abcdefghijklmnopqrstuvwxyz234567',
                 (get_byte(decode(md5($3 || i::text), 'hex'), k) % 32) + 1, 1), '' ORDER BY k)
          FROM generate_series(0, 15) k),
       $1, $4 || '-' || lpad(i::text, 5, '0'),
       '02:5e:' || substr(md5($4), 1, 2) || ':' || lpad(to_hex((i >> 16) & 255), 2, '0') || ':'
         || lpad(to_hex((i >> 8) & 255), 2, '0') || ':' || lpad(to_hex(i & 255), 2, '0'),
       'SEED-' || upper($4) || '-' || i,
       (ARRAY['glkvm-rm1', 'glkvm-rm1pe', 'pikvm-v4', 'nanokvm'])[i % 4 + 1],
       (ARRAY['1.2.0', '1.3.1', '2.0.0'])[i % 3 + 1],
       md5($3 || 'secret' || i::text) || md5($3 || 'secret2' || i::text)
     FROM generate_series($2::int, $2::int + $5::int - 1) i
     ORDER BY i
     RETURNING id`,
    [accountId, start, randomBytes(8).toString('hex'), prefix, n],
  );
  return r.rows.map((x) => x.id);
}
