/**
 * PostgreSQL restarting under a running replica: while it is down the API says 503 (not a 500,
 * no crash), afterwards the replica carries on with nothing lost and binding works again.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresEngine } from '../../../scripts/cloud/engines.mjs';
import {
  api,
  bindByCode,
  failure,
  identity,
  result,
  signUpAndIn,
  startKit,
  type Kit,
} from '../test-kit';

const dir = mkdtempSync(join(tmpdir(), 'fleet-pg-restart-'));
chmodSync(dir, 0o755); // the postgres user must reach the data folder under it
let pg: PostgresEngine | null = null;
let kit: Kit | null = null;
afterAll(async () => {
  await kit?.close();
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

type Devices = { devices: { id: string }[] };

describe('PostgreSQL restarting', () => {
  it('503 while it is down, then everything back and nothing lost', async () => {
    pg = await startPostgres({ dir: join(dir, 'pg') });
    kit = await startKit({ postgres: pg });
    const { cookie } = await signUpAndIn(kit, 'restart1', 'pw1234');
    const before = await bindByCode(kit, cookie);

    const port = pg.port;
    await pg.stop();
    pg = null;
    const down = failure(await api(kit, 'GET', '/devices', undefined, { cookie }));
    expect(down).toMatchObject({ status: 503, error: 'DatabaseUnavailableError' });
    const downCode = failure(
      await api(kit, 'POST', '/bind/codes', { device: identity() }, { device: true }),
    );
    expect(downCode.status).toBe(503);

    pg = await startPostgres({ dir: join(dir, 'pg'), port });
    // the pool reconnects on its own: poll until the API answers again
    await expect
      .poll(async () => (await api(kit!, 'GET', '/devices', undefined, { cookie })).statusCode, {
        timeout: 20_000,
        interval: 250,
      })
      .toBe(200);
    const list = result<Devices>(await api(kit, 'GET', '/devices', undefined, { cookie }));
    expect(list.devices.map((d) => d.id)).toEqual([before.device_id]);
    // the LISTEN connection is back too: a notification wakes a 5 s wait well before its end
    const fleet = kit.fleet;
    await expect
      .poll(
        async () => {
          const t = Date.now();
          const woken = fleet.waiters.wait('restart-key', 5000, new AbortController().signal);
          await fleet.db.query('SELECT pg_notify($1, $2)', [fleet.waiters.channel, 'restart-key']);
          await woken;
          return Date.now() - t < 4000;
        },
        { timeout: 30_000, interval: 100 },
      )
      .toBe(true);
    // binding works again
    const after = await bindByCode(kit, cookie);
    expect(after.account.username).toBe('restart1');
  }, 90_000);
});
