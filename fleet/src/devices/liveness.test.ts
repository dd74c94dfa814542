import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../agents/test-kit';
import { sql, startKit, type Kit } from '../test-kit';
import { ReplicaLiveness } from './liveness';
import { seedDevices } from './seed';

const log = pino({ level: 'silent' });

describe('replicas alive in PostgreSQL', () => {
  let kit: Kit;
  let account: string;
  beforeAll(async () => {
    kit = await startKit();
    account = (
      await sql<{ id: string }>(
        kit,
        `INSERT INTO accounts (username, email, password_hash, region)
         VALUES ('liveness', 'liveness@example.com', 'x', 'us') RETURNING id`,
      )
    )[0]!.id;
  });
  afterAll(() => kit?.close());

  it('the running replica writes its row at start', async () => {
    const rows = await sql<{ name: string }>(kit, 'SELECT name FROM replicas');
    expect(rows.map((r) => r.name)).toContain('fleet-test');
  });

  it("a dead replica's devices are nobody's, last seen when it was; a live one's stay", async () => {
    const [dead1, dead2, live] = await seedDevices(kit.fleet.db, account, 3, { prefix: 'live' });
    await sql(
      kit,
      `INSERT INTO replicas (name, url, seen_at) VALUES
         ('killed', 'https://a', now() - interval '60 seconds'),
         ('alive', 'https://b', now())`,
    );
    await sql(kit, `UPDATE devices SET replica = 'killed' WHERE id = ANY($1)`, [[dead1, dead2]]);
    await sql(kit, `UPDATE devices SET replica = 'alive' WHERE id = $1`, [live]);
    const l = new ReplicaLiveness({
      db: kit.fleet.db,
      log,
      replica: 'fleet-test',
      url: 'https://fleet.test',
      held: () => [],
      claim: async () => {},
    });
    expect(await l.clearStale()).toBe(2);
    const rows = await sql<{ id: string; replica: string | null; cleared_at_death: boolean }>(
      kit,
      `SELECT d.id, d.replica,
              COALESCE(d.last_seen = (SELECT seen_at FROM replicas WHERE name = 'killed'), false)
                AS cleared_at_death
       FROM devices d WHERE d.id = ANY($1) ORDER BY d.name`,
      [[dead1, dead2, live]],
    );
    expect(rows.map((r) => [r.replica, r.cleared_at_death])).toEqual([
      [null, true],
      [null, true],
      ['alive', false],
    ]);
    // a second pass finds nothing more
    expect(await l.clearStale()).toBe(0);
  });

  it('a replica that was stale claims the sockets it still holds again', async () => {
    const [mine] = await seedDevices(kit.fleet.db, account, 1, { prefix: 'slow' });
    const claimed: string[] = [];
    const l = new ReplicaLiveness({
      db: kit.fleet.db,
      log,
      replica: 'slow',
      url: 'https://slow',
      held: () => [mine!],
      claim: async (id) => {
        claimed.push(id);
      },
      beatMs: 50,
      staleMs: 20_000,
    });
    await l.start();
    try {
      // beating on time: nothing to claim
      await new Promise((r) => setTimeout(r, 300));
      expect(claimed).toEqual([]);
      // as if the database had not heard it for a minute (others cleared its devices)
      await sql(
        kit,
        `UPDATE replicas SET seen_at = now() - interval '60 seconds' WHERE name = 'slow'`,
      );
      await waitFor(() => claimed.length > 0, 10_000, 'the devices claimed again');
      expect(claimed[0]).toBe(mine);
    } finally {
      await l.close();
    }
  });
});
