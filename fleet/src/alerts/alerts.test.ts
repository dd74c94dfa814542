/**
 * Alerts against a real PostgreSQL, the SMTP sink and loopback HTTP receivers, with two fleet
 * replicas (two scanners) on one database: an offline device alerts each target once per
 * offline period, by mail (subject = the text) and by a signed webhook; a failing webhook is
 * tried 3 times with backoff, then `failed`; the admin API and its refusals.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetAlertDelivery, FleetAlertPayload, FleetAlertTarget } from '@kvm/protocol';
import {
  api,
  bindByCode,
  failure,
  result,
  signUpAndIn,
  sql,
  startKit,
  type Kit,
} from '../test-kit';
import { sweepExpired } from '../db/sweep';
import { raiseAlert } from './alerts';
import { failureText, postWebhook } from './send';

/** A loopback HTTP receiver: keeps each request, answers `status()` (or never, when null). */
class Receiver {
  readonly calls: Array<{ at: number; headers: IncomingHttpHeaders; body: string }> = [];
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(status: () => number | null, answer = ''): Promise<Receiver> {
    const server = createServer();
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    const r = new Receiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/h`);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        r.calls.push({
          at: Date.now(),
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        const code = status();
        if (code === null) return; // hangs
        res.statusCode = code;
        res.end(answer);
      });
    });
    return r;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((res) => this.server.close(() => res()));
  }
}

const ALERTS = { offline_after_s: 2, scan_s: 0.5 };
let a: Kit;
let b: Kit;
let admin: string;
let alice: string;
let hook: Receiver;

beforeAll(async () => {
  a = await startKit({ config: { alerts: ALERTS } });
  b = await startKit({ postgres: a.pg, config: { replica: 'fleet-test-b', alerts: ALERTS } });
  admin = (await signUpAndIn(a, 'fleetadmin', 'pw1234')).cookie;
  alice = (await signUpAndIn(a, 'alice', 'pw1234')).cookie;
  hook = await Receiver.start(() => 204);
}, 60_000);
afterAll(async () => {
  await hook?.stop();
  await b?.close();
  await a?.close();
});

async function addTarget(body: Record<string, unknown>): Promise<FleetAlertTarget> {
  return result<FleetAlertTarget>(await api(a, 'POST', '/alerts/targets', body, { cookie: admin }));
}

async function deliveries(): Promise<FleetAlertDelivery[]> {
  return result<FleetAlertDelivery[]>(
    await api(a, 'GET', '/alerts/deliveries?limit=200', undefined, { cookie: admin }),
  );
}

function mailsTo(to: string) {
  return [...a.sink.mails(), ...b.sink.mails()].filter((m) => m.to.includes(to));
}

function payloads(r: Receiver): FleetAlertPayload[] {
  return r.calls.map((c) => JSON.parse(c.body) as FleetAlertPayload);
}

describe('alert targets (admin)', () => {
  it('checks what it is given; answers a webhook secret once; a user is refused', async () => {
    expect(
      failure(
        await api(
          a,
          'POST',
          '/alerts/targets',
          { kind: 'email', target: 'x@example.com', events: ['device_offline'] },
          { cookie: alice },
        ),
      ),
    ).toMatchObject({ status: 403, error: 'AdminRequiredError' });
    expect(
      failure(await api(a, 'GET', '/alerts/targets', undefined, { cookie: alice })).status,
    ).toBe(403);
    const bad = [
      { kind: 'sms', target: '+100', events: ['device_offline'] },
      { kind: 'email', target: 'not an address', events: ['device_offline'] },
      { kind: 'webhook', target: 'ftp://127.0.0.1/x', events: ['device_offline'] },
      { kind: 'webhook', target: 'javascript:alert(1)', events: ['device_offline'] },
      { kind: 'webhook', target: hook.url, events: [] },
      { kind: 'webhook', target: hook.url, events: ['device_online'] },
    ];
    for (const body of bad) {
      const f = failure(await api(a, 'POST', '/alerts/targets', body, { cookie: admin }));
      expect(f, JSON.stringify(body)).toMatchObject({ status: 400, error: 'ValidatorError' });
    }
    const made = await addTarget({
      kind: 'webhook',
      target: 'https://hooks.example.com/x',
      events: ['rollout_stopped', 'rollout_stopped'],
    });
    expect(made.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(made.events).toEqual(['rollout_stopped']);
    const listed = result<FleetAlertTarget[]>(
      await api(a, 'GET', '/alerts/targets', undefined, { cookie: admin }),
    );
    expect(listed.find((t) => t.id === made.id)).toEqual({
      id: made.id,
      kind: 'webhook',
      target: 'https://hooks.example.com/x',
      events: ['rollout_stopped'],
      created_at: made.created_at,
    });
    result(await api(a, 'DELETE', `/alerts/targets/${made.id}`, undefined, { cookie: admin }));
    expect(
      failure(await api(a, 'DELETE', `/alerts/targets/${made.id}`, undefined, { cookie: admin }))
        .status,
    ).toBe(404);
    const log = await sql<{ kind: string; actor: string }>(
      a,
      `SELECT kind, actor FROM events WHERE kind LIKE 'alert_target_%' ORDER BY id`,
    );
    expect(log).toEqual([
      { kind: 'alert_target_added', actor: 'fleetadmin' },
      { kind: 'alert_target_removed', actor: 'fleetadmin' },
    ]);
  });
});

describe('the offline alert', () => {
  it('reaches the mail and the webhook once per offline period across two scanners; the signature verifies', async () => {
    await addTarget({ kind: 'email', target: 'ops@example.com', events: ['device_offline'] });
    const wh = await addTarget({ kind: 'webhook', target: hook.url, events: ['device_offline'] });
    const dev = await bindByCode(a, alice);
    // a device bound and never connected has no offline period: no alert for it
    await bindByCode(a, alice);
    await a.fleet.devices.setPresence(dev.device_id, 'fleet-test');
    await a.fleet.devices.setPresence(dev.device_id, null);
    const went = Date.now();

    await expect
      .poll(() => mailsTo('ops@example.com').length + hook.calls.length, { timeout: 20_000 })
      .toBeGreaterThanOrEqual(2);
    expect(Date.now() - went).toBeGreaterThanOrEqual(1900);
    // more scans on both replicas, also at once, find it claimed
    const again = await Promise.all([
      a.fleet.alerts.scanOffline(),
      b.fleet.alerts.scanOffline(),
      a.fleet.alerts.scanOffline(),
      b.fleet.alerts.scanOffline(),
    ]);
    expect(again).toEqual([0, 0, 0, 0]);
    await expect
      .poll(async () => (await deliveries()).map((d) => d.state), { timeout: 20_000 })
      .toEqual(['sent', 'sent']);
    await Promise.all([a.fleet.alerts.tick(), b.fleet.alerts.tick()]);
    const mails = mailsTo('ops@example.com');
    expect(mails).toHaveLength(1);
    expect(hook.calls).toHaveLength(1);
    const name = (
      await sql<{ name: string }>(a, 'SELECT name FROM devices WHERE id = $1', [dev.device_id])
    )[0]!.name;
    expect(mails[0]!.subject).toMatch(new RegExp(`^Device "${name}" is offline since `));
    expect(mails[0]!.text).toContain(dev.device_id);

    const call = hook.calls[0]!;
    const body = JSON.parse(call.body) as FleetAlertPayload;
    expect(body).toMatchObject({
      event: 'device_offline',
      text: mails[0]!.subject,
      device: { id: dev.device_id, name },
    });
    expect(body.device!.last_seen).toBeGreaterThan(went - 5000);
    expect(call.headers['content-type']).toBe('application/json');
    const want = `sha256=${createHmac('sha256', wh.secret!).update(call.body).digest('hex')}`;
    expect(call.headers['x-fleet-signature']).toBe(want);
    const sent = await sql<{ n: string }>(
      a,
      `SELECT count(*) AS n FROM events WHERE kind = 'alert_sent'`,
    );
    expect(Number(sent[0]!.n)).toBe(2);

    // back online, then offline again: a new offline period, a new alert
    await b.fleet.devices.setPresence(dev.device_id, 'fleet-test-b');
    await b.fleet.devices.setPresence(dev.device_id, null);
    await expect
      .poll(() => payloads(hook).filter((p) => p.device?.id === dev.device_id).length, {
        timeout: 20_000,
      })
      .toBe(2);
    await expect.poll(() => mailsTo('ops@example.com').length, { timeout: 20_000 }).toBe(2);
  }, 60_000);
});

describe('deliveries', () => {
  it('a failing webhook is tried 3 times with backoff, then failed (alert_failed in the log)', async () => {
    const broken = await Receiver.start(() => 500, 'x'.repeat(100_000));
    try {
      await addTarget({ kind: 'webhook', target: broken.url, events: ['rollout_stopped'] });
      const n = await a.fleet.alerts.raise('rollout_stopped', {
        text: 'Rollout "V2 to lab" stopped',
        job: { id: 'j1', name: 'V2 to lab', reason: '2 devices failed' },
      });
      expect(n).toBe(1);
      await expect
        .poll(async () => (await deliveries()).find((d) => d.event === 'rollout_stopped')?.state, {
          timeout: 30_000,
        })
        .toBe('failed');
      const d = (await deliveries()).find((x) => x.event === 'rollout_stopped')!;
      expect(d.tries).toBe(3);
      expect(d.error).toMatch(/^HTTP 500: x+$/);
      expect(d.error!.length).toBeLessThan(300);
      expect(broken.calls).toHaveLength(3);
      const [t1, t2, t3] = broken.calls.map((c) => c.at);
      expect(t2! - t1!).toBeGreaterThanOrEqual(900);
      expect(t3! - t2!).toBeGreaterThanOrEqual(3900);
      expect(JSON.parse(broken.calls[0]!.body)).toMatchObject({
        event: 'rollout_stopped',
        job: { id: 'j1', reason: '2 devices failed' },
      });
      const failed = await sql<{ detail: { error: string; tries: number } }>(
        a,
        `SELECT detail FROM events WHERE kind = 'alert_failed'`,
      );
      expect(failed.map((f) => f.detail.tries)).toEqual([3]);
      // the e-mail target does not subscribe to rollout_stopped
      expect(mailsTo('ops@example.com').map((m) => m.subject)).not.toContain(
        'Rollout "V2 to lab" stopped',
      );
    } finally {
      await broken.stop();
    }
  }, 60_000);

  it('a webhook that does not answer fails after 5 s', async () => {
    const silent = await Receiver.start(() => null);
    try {
      const t = Date.now();
      const e = await postWebhook(silent.url, 's', '{}').catch((err: unknown) => err);
      expect(e).toBeInstanceOf(Error);
      expect(failureText(e)).toBe('no answer within 5 s');
      expect(Date.now() - t).toBeGreaterThanOrEqual(4900);
      expect(Date.now() - t).toBeLessThan(15_000);
    } finally {
      await silent.stop();
    }
  }, 30_000);

  it('test sends to one target now; the deliveries list is newest first; raiseAlert without subscribers makes none', async () => {
    const mail = await addTarget({
      kind: 'email',
      target: 'test@example.com',
      events: ['rollout_stopped'],
    });
    const sent = result<FleetAlertDelivery>(
      await api(a, 'POST', `/alerts/targets/${mail.id}/test`, {}, { cookie: admin }),
    );
    expect(sent).toMatchObject({ target_id: mail.id, event: 'test', state: 'sent', tries: 1 });
    expect(mailsTo('test@example.com')[0]!.subject).toMatch(/^A test alert from the KVM fleet/);
    expect((await deliveries())[0]!.id).toBe(sent.id);
    expect(
      failure(await api(a, 'POST', `/alerts/targets/${mail.id}/test`, {}, { cookie: alice }))
        .status,
    ).toBe(403);
    expect(
      failure(
        await api(
          a,
          'POST',
          '/alerts/targets/00000000-0000-0000-0000-000000000000/test',
          {},
          { cookie: admin },
        ),
      ).status,
    ).toBe(404);
    await sql(a, `DELETE FROM alert_targets`);
    expect(await raiseAlert(a.fleet.db, 'rollout_stopped', { text: 'nobody listens' })).toBe(0);
  });
});

describe('retention', () => {
  it('the sweep drops old deliveries and the claims of offline periods that ended, keeps a current one', async () => {
    const t = await addTarget({
      kind: 'email',
      target: 'old@example.com',
      events: ['device_offline'],
    });
    await sql(
      a,
      `INSERT INTO alert_deliveries (target_id, event, payload, state, created_at) VALUES
         ($1, 'test', '{}', 'sent', now() - interval '100 days'),
         ($1, 'test', '{}', 'sent', now() - interval '10 days')`,
      [t.id],
    );
    const gone = (await bindByCode(a, alice)).device_id;
    const still = (await bindByCode(a, alice)).device_id;
    // one statement: the replicas' scanners never see the offline period without its claim
    await sql(
      a,
      `WITH u AS (UPDATE devices SET last_seen = now() - interval '3 days' WHERE id = $2
                  RETURNING id, last_seen)
       INSERT INTO alert_offline (device_id, since, raised_at)
       SELECT $1, now() - interval '5 days', now() - interval '5 days'
       UNION ALL SELECT id, last_seen, now() - interval '2 days' FROM u`,
      [gone, still],
    );
    await sweepExpired(a.fleet.db, 90);
    const ages = await sql<{ old: boolean }>(
      a,
      `SELECT created_at < now() - interval '50 days' AS old FROM alert_deliveries WHERE target_id = $1`,
      [t.id],
    );
    expect(ages).toEqual([{ old: false }]);
    const claims = await sql<{ device_id: string }>(
      a,
      'SELECT device_id FROM alert_offline WHERE device_id = ANY($1)',
      [[gone, still]],
    );
    expect(claims).toEqual([{ device_id: still }]);
  });
});
