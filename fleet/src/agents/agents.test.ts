/**
 * The agent socket (docs/cloud.md "The agent socket") against a FAKE device agent: refusals
 * from the upgrade's headers, welcome, replacement, heartbeat death, bad frames, commands,
 * stream limits, unbinding both ways, TURN renewal.
 */
import { describe, expect, it } from 'vitest';
import { AGENT_MAX_FRAME, AGENT_PATH } from '@kvm/protocol';
import { DeviceTimeoutError } from './errors';
import {
  closedAfterEach,
  FakeAgent,
  FakeDirectory,
  startReplica,
  waitFor,
  type TestReplica,
} from './test-kit';

const { replicas, agents } = closedAfterEach();

async function setup(opts: Parameters<typeof startReplica>[2] = {}) {
  const dir = new FakeDirectory();
  dir.add('dev1', 'acc1');
  const r = await startReplica(dir, 'fleet-a', opts);
  replicas.push(r);
  return { dir, r };
}

async function agent(r: TestReplica, opts: Parameters<typeof FakeAgent.connect>[1]) {
  const a = await FakeAgent.connect(r.url, opts);
  agents.push(a);
  return a;
}

describe('agent socket: who may connect', () => {
  it('refuses missing and unknown credentials (401), a revoked binding (401 + X-Kvm-Binding), other hardware (403, logged)', async () => {
    const { dir, r } = await setup();
    const plain = await fetch(`${r.url}${AGENT_PATH}`);
    expect(plain.status).toBe(401);
    expect(((await plain.json()) as { result: { error: string } }).result.error).toBe(
      'UnauthorizedError',
    );

    const unknown = await agent(r, { id: 'dev1', secret: 'wrong' });
    expect(unknown.refused?.status).toBe(401);
    expect(unknown.refused?.headers['x-kvm-binding']).toBeUndefined();

    const other = await agent(r, { id: 'dev1', mac: '02:00:00:00:00:99' });
    expect(other.refused?.status).toBe(403);
    expect(dir.events).toContainEqual(
      expect.objectContaining({
        kind: 'agent_refused',
        deviceId: 'dev1',
        detail: expect.objectContaining({ reason: 'fingerprint' }),
      }),
    );

    dir.devices.get('dev1')!.revoked = true;
    const revoked = await agent(r, { id: 'dev1' });
    expect(revoked.refused?.status).toBe(401);
    expect(revoked.refused?.headers['x-kvm-binding']).toBe('revoked');
    expect(r.relay.localCount).toBe(0);
  });

  it('answers hello with welcome (replica, endpoints, TURN, ping) and records presence', async () => {
    const turn = { secret: 'a'.repeat(32), uris: ['turn:127.0.0.1:3478'], ttl_s: 600 };
    const { dir, r } = await setup({ turn });
    const a = await (await agent(r, { id: 'dev1' })).ready();
    expect(a.welcome).toMatchObject({
      replica: 'fleet-a',
      endpoints: [`ws://127.0.0.1:${r.port}${AGENT_PATH}`],
      ping_ms: 20_000,
      turn: { uris: turn.uris, ttl: 600, username: expect.stringMatching(/^\d+:dev1$/) },
    });
    expect(dir.presence.get('dev1')).toBe('fleet-a');
    await waitFor(
      () => dir.events.find((e) => e.kind === 'agent_connected'),
      5000,
      'connected event',
    );
    expect(await r.relay.online('dev1')).toBe(true);
    a.close();
    await waitFor(() => dir.presence.get('dev1') === null, 5000, 'presence cleared');
    expect(await r.relay.online('dev1')).toBe(false);
  });

  it('a second connection of the device replaces the first (4000 replaced), presence stays', async () => {
    const { dir, r } = await setup();
    const first = await (await agent(r, { id: 'dev1' })).ready();
    const second = await (await agent(r, { id: 'dev1' })).ready();
    expect(await first.whenClosed()).toEqual({ code: 4000, reason: 'replaced' });
    expect(second.closed).toBeNull();
    expect(r.relay.localConnection('dev1')).toBeDefined();
    expect(dir.presence.get('dev1')).toBe('fleet-a');
    expect(await r.relay.command('dev1', 'info')).toEqual({ ok: true });
  });
});

describe('agent socket: replaced on another replica', () => {
  it('news of an older socket elsewhere spares this one; of a newer one closes it (4000)', async () => {
    const { r } = await setup();
    const a = await (await agent(r, { id: 'dev1' })).ready();
    const mine = r.relay.localConnection('dev1')!;
    r.relay.replacedElsewhere('dev1', mine.connId, Date.now());
    r.relay.replacedElsewhere('dev1', 'elsewhere', mine.connectedAt - 1000);
    expect(await r.relay.command('dev1', 'info')).toEqual({ ok: true });
    expect(a.closed).toBeNull();
    r.relay.replacedElsewhere('dev1', 'elsewhere', Date.now() + 1);
    expect(await a.whenClosed()).toEqual({ code: 4000, reason: 'replaced' });
  });
});

describe('agent socket: liveness and bad frames', () => {
  it('a silent socket is dead after deadMs; one that pings lives on', async () => {
    const { dir, r } = await setup({ deadMs: 1000 });
    const quiet = await (await agent(r, { id: 'dev1' })).ready();
    // Its last word (hello) was before this.
    const started = Date.now();
    dir.add('dev2', 'acc1');
    const chatty = await (await agent(r, { id: 'dev2', pingMs: 100 })).ready();
    await quiet.whenClosed(10_000);
    expect(quiet.closed!.code).toBe(1006);
    expect(Date.now() - started).toBeGreaterThanOrEqual(800);
    await waitFor(() => dir.presence.get('dev1') === null, 5000, 'dead device offline');
    // Alive well past the quiet one's death.
    await new Promise((res) => setTimeout(res, 1500));
    expect(chatty.closed).toBeNull();
    expect(chatty.frames.some((f) => f.t === 'pong')).toBe(true);
  });

  it.each([
    ['not JSON', (a: FakeAgent) => a.ws.send('{nope'), 1008],
    [
      'an unknown frame',
      (a: FakeAgent) => a.ws.send(JSON.stringify({ t: 'shell', cmd: 'x' })),
      1008,
    ],
    [
      'a frame only the fleet sends',
      (a: FakeAgent) =>
        a.ws.send(
          JSON.stringify({
            t: 'open',
            sid: 1,
            kind: 'http',
            method: 'GET',
            path: '/',
            headers: {},
            user: { id: 'x', name: 'x' },
          }),
        ),
      1008,
    ],
    ['a short binary frame', (a: FakeAgent) => a.ws.send(Buffer.from([0, 0])), 1008],
    [
      'a frame over AGENT_MAX_FRAME',
      (a: FakeAgent) => a.ws.send(Buffer.alloc(AGENT_MAX_FRAME + 1)),
      1009,
    ],
  ])('%s closes the socket', async (_n, bad, code) => {
    const { r } = await setup();
    const a = await (await agent(r, { id: 'dev1' })).ready();
    bad(a);
    expect((await a.whenClosed()).code).toBe(code);
    await waitFor(() => r.relay.localCount === 0, 5000, 'forgotten');
  });

  it('frames before hello are refused, and no hello within helloMs closes', async () => {
    const { r } = await setup({ helloMs: 500 });
    const early = await agent(r, { id: 'dev1', noHello: true });
    early.send({ t: 'ping', ts: 1 });
    expect((await early.whenClosed()).code).toBe(1008);
    const silent = await agent(r, { id: 'dev1', noHello: true, pingMs: 0 });
    expect(await silent.whenClosed()).toEqual({ code: 1008, reason: 'hello expected' });
  });
});

describe('agent socket: commands, streams, unbinding, TURN', () => {
  it('commands answer, fail, and time out', async () => {
    const { r } = await setup();
    await (
      await agent(r, {
        id: 'dev1',
        onCommand: (name) => {
          if (name === 'snapshot') throw new Error('no signal');
          if (name === 'unbind') return undefined;
          return { model: 'test' };
        },
      })
    ).ready();
    expect(await r.relay.command('dev1', 'info')).toEqual({ model: 'test' });
    await expect(r.relay.command('dev1', 'snapshot')).rejects.toMatchObject({
      wireName: 'DeviceCommandError',
      status: 502,
    });
    await expect(r.relay.command('dev1', 'unbind', undefined, 300)).rejects.toBeInstanceOf(
      DeviceTimeoutError,
    );
    await expect(r.relay.command('nope', 'info')).rejects.toMatchObject({
      status: 502,
      wireName: 'DeviceOfflineError',
    });
  });

  it('refuses a stream past maxStreams (503) and frees the slot when one ends', async () => {
    const { r } = await setup({ maxStreams: 2, headTimeoutMs: 1500 });
    await (await agent(r, { id: 'dev1', silentPaths: ['/slow'] })).ready();
    const h = { 'x-test-user': 'acc1' };
    const slow = [
      fetch(`${r.url}/d/dev1/slow/1`, { headers: h }),
      fetch(`${r.url}/d/dev1/slow/2`, { headers: h }),
    ];
    await waitFor(() => r.relay.localConnection('dev1')!.openStreams === 2, 5000, 'two streams');
    const third = await fetch(`${r.url}/d/dev1/api/echo-headers`, { headers: h });
    expect(third.status).toBe(503);
    expect(((await third.json()) as { result: { error: string } }).result.error).toBe(
      'DeviceBusyError',
    );
    // The silent ones time out (504) and their slots are free again.
    for (const s of await Promise.all(slow)) expect(s.status).toBe(504);
    await waitFor(() => r.relay.localConnection('dev1')!.openStreams === 0, 5000, 'slots freed');
    expect((await fetch(`${r.url}/d/dev1/api/echo-headers`, { headers: h })).status).toBe(200);
  });

  it('unbound from the device ends the binding; from the fleet reaches the device', async () => {
    const { dir, r } = await setup();
    const a = await (await agent(r, { id: 'dev1' })).ready();
    a.send({ t: 'unbound', by: 'device' });
    await waitFor(() => dir.unbound.includes('dev1'), 5000, 'unboundByDevice');
    await a.whenClosed();

    const b = await (await agent(r, { id: 'dev1' })).ready();
    await r.relay.notifyUnbound('dev1');
    await waitFor(
      () => b.frames.find((f) => f.t === 'unbound' && f.by === 'fleet'),
      5000,
      'unbound frame',
    );
    expect((await b.whenClosed()).code).toBe(4002);
  });

  it('renews TURN credentials before they expire (turn frame)', async () => {
    const turn = { secret: 'b'.repeat(32), uris: ['turn:127.0.0.1:3478'], ttl_s: 2 };
    const { r } = await setup({ turn });
    const a = await (await agent(r, { id: 'dev1' })).ready();
    const first = a.welcome!.turn!;
    const renewed = await waitFor(() => a.frames.find((f) => f.t === 'turn'), 5000, 'turn frame');
    expect(renewed.t === 'turn' && renewed.turn).toMatchObject({ uris: turn.uris, ttl: 2 });
    const expiry = (u: string) => Number(u.split(':')[0]);
    expect(renewed.t === 'turn' && expiry(renewed.turn!.username)).toBeGreaterThanOrEqual(
      expiry(first.username),
    );
  });
});
