/**
 * The relay on the core's real app (fleet/src/app.ts, PostgreSQL through the kit): a device
 * bound by code connects its (FAKE) agent with the secret it got; its owner opens its console
 * through the tunnel, another account cannot; the secret on other hardware is refused and
 * logged; unbinding on the fleet reaches the agent and revokes the secret.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { BindCodeAnswer, BindResult } from '@kvm/protocol';
import { SESSION_COOKIE } from '../accounts/accounts';
import { api, identity, result, signUpAndIn, sql, startKit, type Kit } from '../test-kit';
import { FakeAgent, waitFor } from './test-kit';

let kit: Kit;
let url: string;
let alice: string;
let bob: string;
const agents: FakeAgent[] = [];

beforeAll(async () => {
  kit = await startKit({ relay: true });
  await kit.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = kit.app.server.address() as { port: number };
  url = `http://127.0.0.1:${addr.port}`;
  alice = (await signUpAndIn(kit, 'alice', 'pw1234')).cookie;
  bob = (await signUpAndIn(kit, 'bobby', 'pw5678')).cookie;
});
afterAll(async () => {
  for (const a of agents) a.close();
  await kit?.close();
});

async function bind(): Promise<{ id: ReturnType<typeof identity>; bound: BindResult }> {
  const id = identity();
  const code = result<BindCodeAnswer>(
    await api(kit, 'POST', '/bind/codes', { device: id }, { device: true }),
  );
  result(await api(kit, 'POST', '/devices/claim', { code: code.code }, { cookie: alice }));
  const bound = result<{ pending: false } & BindResult>(
    await api(kit, 'POST', '/bind/poll', { claim_token: code.claim_token }, { device: true }),
  );
  return { id, bound };
}

const as = (cookie: string) => ({ cookie: `${SESSION_COOKIE}=${cookie}` });

describe('the relay on the core', () => {
  it('a bound device connects, its owner opens its console, another account gets 404', async () => {
    const { id, bound } = await bind();
    const agent = await FakeAgent.connect(url, {
      id: bound.device_id,
      secret: bound.secret,
      mac: id.mac,
      serial: id.serial,
    });
    agents.push(agent);
    await agent.ready();
    expect(agent.welcome!.replica).toBe('fleet-test');
    const list = result<{ devices: Array<{ id: string; online: boolean }> }>(
      await api(kit, 'GET', '/devices', undefined, { cookie: alice }),
    );
    expect(list.devices.find((d) => d.id === bound.device_id)?.online).toBe(true);

    const mine = await fetch(`${url}/d/${bound.device_id}/api/echo-headers`, {
      headers: as(alice),
    });
    expect(mine.status).toBe(200);
    const seen = (await mine.json()) as { headers: Record<string, string>; user: { name: string } };
    expect(seen.headers.cookie).toBeUndefined();
    expect(seen.user.name).toBe('alice');

    // A socket through the core's own @fastify/websocket: the device's subprotocol answers.
    const ws = new WebSocket(
      `${url.replace('http', 'ws')}/d/${bound.device_id}/janus/ws`,
      // The device picks the last one offered (ws alone would answer with the first).
      ['x-other', 'janus-protocol'],
      { headers: as(alice) },
    );
    await new Promise((res, rej) => {
      ws.on('open', res);
      ws.on('error', rej);
    });
    expect(ws.protocol).toBe('janus-protocol');
    ws.close();

    const theirs = await fetch(`${url}/d/${bound.device_id}/api/echo-headers`, {
      headers: as(bob),
    });
    expect(theirs.status).toBe(404);
    const none = await fetch(`${url}/d/${bound.device_id}/api/echo-headers`);
    expect(none.status).toBe(401);
  });

  it('the secret on other hardware is 403 and logged; unbinding reaches the agent, then 401 revoked', async () => {
    const { id, bound } = await bind();
    const thief = await FakeAgent.connect(url, {
      id: bound.device_id,
      secret: bound.secret,
      mac: '02:de:ad:be:ef:00',
      serial: id.serial,
    });
    agents.push(thief);
    expect(thief.refused?.status).toBe(403);
    const refused = await sql<{ kind: string }>(
      kit,
      'SELECT kind FROM events WHERE device_id = $1',
      [bound.device_id],
    );
    expect(refused.map((r) => r.kind)).toContain('agent_refused');

    const agent = await FakeAgent.connect(url, {
      id: bound.device_id,
      secret: bound.secret,
      mac: id.mac,
      serial: id.serial,
    });
    agents.push(agent);
    await agent.ready();
    const del = await api(kit, 'DELETE', `/devices/${bound.device_id}`, undefined, {
      cookie: alice,
    });
    expect(del.statusCode).toBe(200);
    await waitFor(
      () => agent.frames.find((f) => f.t === 'unbound' && f.by === 'fleet'),
      10_000,
      'unbound frame',
    );
    await agent.whenClosed();
    const again = await FakeAgent.connect(url, {
      id: bound.device_id,
      secret: bound.secret,
      mac: id.mac,
      serial: id.serial,
    });
    agents.push(again);
    expect(again.refused?.status).toBe(401);
    expect(again.refused?.headers['x-kvm-binding']).toBe('revoked');
  });
});
