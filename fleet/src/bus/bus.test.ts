/**
 * Two replicas joined by a real nats-server (scripts/cloud/engines.mjs): a FAKE device agent on
 * replica A, the browser on replica B: HTTP (3 MiB each way), WebSocket, commands, presence,
 * replacement across replicas, a replica stopping or killed.
 */
import { createHash } from 'node:crypto';
import { connect } from 'nats';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AGENT_PATH, AGENT_STREAM_WINDOW } from '@kvm/protocol';
import { startNats } from '../../../scripts/cloud/engines.mjs';
import {
  FakeAgent,
  FakeDirectory,
  bigBody,
  startReplica,
  waitFor,
  type TestReplica,
} from '../agents/test-kit';
import type { NatsBus } from './nats-bus';

type Nats = Awaited<ReturnType<typeof startNats>>;
let nats: Nats;
let replicas: TestReplica[] = [];
let agents: FakeAgent[] = [];

beforeAll(async () => {
  nats = await startNats();
});
afterAll(() => nats?.stop());
afterEach(async () => {
  for (const a of agents) a.close();
  await Promise.all(replicas.map((r) => r.close()));
  replicas = [];
  agents = [];
});

const ME = { 'x-test-user': 'acc1' };
const MiB = 1 << 20;
const FAST = { presenceMs: 200, presenceGoneMs: 1000 };

async function two() {
  const dir = new FakeDirectory();
  dir.add('dev1', 'acc1');
  const a = await startReplica(dir, 'fleet-a', { nats: [nats.url], ...FAST });
  const b = await startReplica(dir, 'fleet-b', { nats: [nats.url], ...FAST });
  replicas.push(a, b);
  // Each knows the other.
  await waitFor(() => (b.relay.bus as NatsBus).liveReplicas().has('fleet-a'), 5000, 'B sees A');
  await waitFor(() => (a.relay.bus as NatsBus).liveReplicas().has('fleet-b'), 5000, 'A sees B');
  const agent = await (
    await FakeAgent.connect(a.url, { id: 'dev1', onCommand: () => ({ model: 'via-a' }) })
  ).ready();
  agents.push(agent);
  return { dir, a, b, agent };
}

describe('two replicas over NATS', () => {
  it('the welcome lists both replicas; a device on A is online, answers commands and serves HTTP from B', async () => {
    const { a, b, agent } = await two();
    expect(agent.welcome!.endpoints).toEqual([
      `ws://127.0.0.1:${a.port}${AGENT_PATH}`,
      `ws://127.0.0.1:${b.port}${AGENT_PATH}`,
    ]);
    expect(b.relay.localCount).toBe(0);
    expect(await b.relay.online('dev1')).toBe(true);
    expect(await b.relay.online('dev9')).toBe(false);
    expect(await b.relay.command('dev1', 'info')).toEqual({ model: 'via-a' });
    await expect(b.relay.command('dev9', 'info')).rejects.toMatchObject({
      wireName: 'DeviceOfflineError',
    });

    const res = await fetch(`${b.url}/d/dev1/api/echo-headers`, {
      headers: { ...ME, cookie: 'fleet=1' },
    });
    expect(res.status).toBe(200);
    expect(
      ((await res.json()) as { headers: Record<string, string> }).headers.cookie,
    ).toBeUndefined();

    const up = Buffer.alloc(3 * MiB);
    for (let i = 0; i < up.length; i += 1) up[i] = (i * 13) & 0xff;
    const posted = await fetch(`${b.url}/d/dev1/upload`, {
      method: 'POST',
      headers: { ...ME, 'content-type': 'application/octet-stream' },
      body: up,
    });
    expect((await posted.json()) as unknown).toMatchObject({
      bytes: up.length,
      sha256: createHash('sha256').update(up).digest('hex'),
    });
    expect(agent.maxUnacked).toBeLessThanOrEqual(AGENT_STREAM_WINDOW);

    const down = Buffer.from(
      await (await fetch(`${b.url}/d/dev1/big?n=${3 * MiB}`, { headers: ME })).arrayBuffer(),
    );
    expect(down.equals(bigBody(3 * MiB))).toBe(true);
  });

  it('a WebSocket opened on B reaches the device on A (subprotocol, a 1 MiB-ish message cut and joined)', async () => {
    const { a, b, agent } = await two();
    const ws = new WebSocket(`${b.url.replace('http', 'ws')}/d/dev1/janus/ws`, ['janus-protocol'], {
      headers: ME,
    });
    await new Promise((res, rej) => {
      ws.on('open', res);
      ws.on('error', rej);
    });
    expect(ws.protocol).toBe('janus-protocol');
    const got: Buffer[] = [];
    ws.on('message', (d) => got.push(d as Buffer));
    const big = Buffer.alloc(MiB - 64, 7);
    big[big.length - 1] = 9;
    ws.send(big);
    ws.send('hello');
    await waitFor(() => got.length === 2, 15_000, 'echoes');
    expect(got[0]!.equals(big)).toBe(true);
    expect(got[1]!.toString()).toBe('hello');
    expect(agent.opens.at(-1)).toMatchObject({ kind: 'ws', protocols: ['janus-protocol'] });
    const closed = new Promise<number>((res) => ws.on('close', (c) => res(c)));
    ws.close(4200);
    await closed;
    await waitFor(() => agent.streams.size === 0, 5000, 'device stream ended');
    // Nothing left of it on either replica.
    await waitFor(() => (a.relay.bus as NatsBus).streamCounts.bridged === 0, 5000, 'A bridge gone');
    await waitFor(() => (b.relay.bus as NatsBus).streamCounts.remote === 0, 5000, 'B stream gone');
    // An http stream too.
    await (await fetch(`${b.url}/d/dev1/api/echo-headers`, { headers: ME })).text();
    await waitFor(
      () => (a.relay.bus as NatsBus).streamCounts.bridged === 0,
      5000,
      'A http bridge gone',
    );
    // B forgets its side when the end has come back over NATS: after the body, not with it
    await waitFor(
      () => (b.relay.bus as NatsBus).streamCounts.remote === 0,
      5000,
      'B http stream gone',
    );
  });

  it('the device connecting to B drops its socket on A (4000 replaced); unbinding from A reaches it on B', async () => {
    const { a, b, agent, dir } = await two();
    const again = await (await FakeAgent.connect(b.url, { id: 'dev1' })).ready();
    agents.push(again);
    expect(await agent.whenClosed()).toEqual({ code: 4000, reason: 'replaced' });
    await waitFor(() => a.relay.localCount === 0, 5000, 'A forgot it');
    expect(dir.presence.get('dev1')).toBe('fleet-b');
    expect(await a.relay.online('dev1')).toBe(true);
    await a.relay.notifyUnbound('dev1');
    await waitFor(() => again.frames.find((f) => f.t === 'unbound'), 5000, 'unbound reached B');
  });

  it('a replica stopping: its streams end on the other, its presence goes', async () => {
    const { a, b } = await two();
    const ws = new WebSocket(`${b.url.replace('http', 'ws')}/d/dev1/api/ws`, { headers: ME });
    await new Promise((res) => ws.on('open', res));
    const closed = new Promise<number>((res) => ws.on('close', (c) => res(c)));
    await a.close();
    replicas = replicas.filter((r) => r !== a);
    expect(await closed).toBe(1011);
    await waitFor(() => !(b.relay.bus as NatsBus).liveReplicas().has('fleet-a'), 3000, 'A gone');
    expect(b.relay.endpoints()).toEqual([`ws://127.0.0.1:${b.port}${AGENT_PATH}`]);
    const res = await fetch(`${b.url}/d/dev1/api/info`, { headers: ME });
    expect(res.status).toBe(502);
  });

  it('NATS restarting: B says offline at once while it is down, reaches the device on A again after', async () => {
    const { a, b } = await two();
    const port = nats.port;
    await nats.stop();
    // Nothing was lost on A: its own device still answers there.
    expect((await fetch(`${a.url}/d/dev1/api/echo-headers`, { headers: ME })).status).toBe(200);
    await waitFor(
      async () => {
        const r = await fetch(`${b.url}/d/dev1/api/echo-headers`, { headers: ME });
        return r.status === 502;
      },
      10_000,
      'B refusing while NATS is down',
    );
    const t0 = Date.now();
    const during = await fetch(`${b.url}/d/dev1/api/echo-headers`, { headers: ME });
    expect(during.status).toBe(502);
    // Not a request's timeout (5 s): refused as soon as asked.
    expect(Date.now() - t0).toBeLessThan(3000);
    nats = await startNats({ port });
    await waitFor(async () => b.relay.online('dev1'), 20_000, 'B reaching A again');
    expect((await fetch(`${b.url}/d/dev1/api/echo-headers`, { headers: ME })).status).toBe(200);
    expect(await b.relay.command('dev1', 'info')).toEqual({ model: 'via-a' });
  });

  it('a replica killed (no goodbye) is gone within presenceGoneMs', async () => {
    const dir = new FakeDirectory();
    const b = await startReplica(dir, 'fleet-b', { nats: [nats.url], ...FAST });
    replicas.push(b);
    // A replica that announces itself like one, then dies without a word.
    const ghost = await connect({ servers: nats.url });
    const beat = setInterval(
      () =>
        ghost.publish(
          'kvm.replica',
          new TextEncoder().encode(
            JSON.stringify({ replica: 'ghost', url: 'https://ghost:8443', ts: Date.now() }),
          ),
        ),
      100,
    );
    await waitFor(() => (b.relay.bus as NatsBus).liveReplicas().has('ghost'), 5000, 'ghost seen');
    expect(b.relay.endpoints()).toContain('wss://ghost:8443/cloud-basic/v1/agent');
    clearInterval(beat);
    const t0 = Date.now();
    await ghost.close();
    await waitFor(() => !(b.relay.bus as NatsBus).liveReplicas().has('ghost'), 5000, 'ghost gone');
    expect(Date.now() - t0).toBeLessThan(4000);
  });
});
