/**
 * The wall socket on a real fleet (PostgreSQL, the relay, agents on their real socket): two
 * sockets watching one device cost one snapshot per interval; pause stops the requests and
 * resume restarts them; an id the user does not see gets nothing; a changed picture arrives and
 * an unchanged one is not sent again; the refusals before the upgrade; a malformed frame.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  AGENT_PATH,
  WALL_MAX_WATCH,
  WALL_PATH,
  parseAgentControl,
  type DeviceIdentity,
  type WallServerFrame,
} from '@kvm/protocol';
import { waitFor } from '../agents/test-kit';
import { SESSION_COOKIE } from '../accounts/accounts';
import { bindByCode, identity, signUpAndIn, startKit, type Kit } from '../test-kit';
import { WALL_SOCKETS_PER_ACCOUNT } from './routes';

const INTERVAL = 1000;
let kit: Kit;
let port: number;
let admin: string;
let user: string;

beforeAll(async () => {
  kit = await startKit({ relay: true, config: { wall: { interval_ms: INTERVAL } } });
  await kit.app.listen({ host: '127.0.0.1', port: 0 });
  port = (kit.app.server.address() as { port: number }).port;
  // the first account is the fleet's admin; the second a plain user
  admin = (await signUpAndIn(kit, 'walladmin', 'pw1234')).cookie;
  user = (await signUpAndIn(kit, 'walluser', 'pw1234')).cookie;
}, 60_000);
afterAll(() => kit?.close());

/** A device's agent on its real socket, answering `snapshot` with `picture`. */
class Agent {
  snapshots = 0;
  picture = Buffer.from('picture-1');
  online = true;
  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, binary: boolean) => {
      if (binary) return;
      const f = parseAgentControl(data.toString());
      if (f?.t !== 'cmd') return;
      if (f.name === 'snapshot') this.snapshots += 1;
      ws.send(
        JSON.stringify({
          t: 'res',
          id: f.id,
          ok: true,
          result: {
            type: 'image/jpeg',
            width: 480,
            height: 270,
            online: this.online,
            jpeg: this.picture.toString('base64'),
          },
        }),
      );
    });
  }

  static async bound(cookie: string): Promise<{ id: string; agent: Agent }> {
    const who: DeviceIdentity = identity();
    const b = await bindByCode(kit, cookie, who);
    const ws = new WebSocket(`ws://127.0.0.1:${port}${AGENT_PATH}`, {
      headers: {
        authorization: `Device ${b.device_id}:${b.secret}`,
        'x-kvm-device-mac': who.mac,
        'x-kvm-device-serial': who.serial,
      },
    });
    const agent = new Agent(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => {
        ws.send(JSON.stringify({ t: 'hello', version: '1.0.0', identity: who }));
      });
      ws.on('message', (d: Buffer, binary: boolean) => {
        if (!binary && parseAgentControl(d.toString())?.t === 'welcome') resolve();
      });
      ws.once('error', reject);
    });
    return { id: b.device_id, agent };
  }
}

/** A wall socket as the fleet console's tab opens it. */
class Wall {
  readonly states: Array<Extract<WallServerFrame, { t: 'state' }>> = [];
  readonly pictures: Array<{ id: string; jpeg: Buffer }> = [];
  closed: number | null = null;
  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, binary: boolean) => {
      if (binary) {
        const n = data[0]!;
        this.pictures.push({
          id: data.subarray(1, 1 + n).toString('ascii'),
          jpeg: data.subarray(1 + n),
        });
      } else this.states.push(JSON.parse(data.toString()) as never);
    });
    ws.on('close', (code) => {
      this.closed = code;
    });
  }

  static open(
    cookie: string | null,
    origin: string | null = `https://127.0.0.1:${port}`,
  ): Promise<{ wall: Wall | null; status: number }> {
    const headers: Record<string, string> = {};
    if (cookie) headers.cookie = `${SESSION_COOKIE}=${cookie}`;
    if (origin) headers.origin = origin;
    const ws = new WebSocket(`ws://127.0.0.1:${port}${WALL_PATH}`, { headers });
    return new Promise((resolve) => {
      ws.once('open', () => resolve({ wall: new Wall(ws), status: 101 }));
      ws.once('unexpected-response', (_req, res) => {
        res.resume();
        resolve({ wall: null, status: res.statusCode ?? 0 });
      });
    });
  }

  send(frame: unknown): void {
    this.ws.send(JSON.stringify(frame));
  }

  of(id: string): Array<{ id: string; jpeg: Buffer }> {
    return this.pictures.filter((p) => p.id === id);
  }
}

async function wall(cookie: string): Promise<Wall> {
  const w = (await Wall.open(cookie)).wall;
  if (!w) throw new Error('wall socket refused');
  return w;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('wall socket', () => {
  it('two sockets watching one device cost one snapshot per interval; pause and resume', async () => {
    const { id, agent } = await Agent.bound(admin);
    const a = await wall(admin);
    const b = await wall(admin);
    a.send({ t: 'watch', ids: [id] });
    b.send({ t: 'watch', ids: [id] });
    await waitFor(() => a.of(id).length > 0 && b.of(id).length > 0, 10_000, 'both pictures');
    expect(a.of(id)[0]!.jpeg.toString()).toBe('picture-1');
    expect(a.states.find((s) => s.id === id)).toMatchObject({ online: true, signal: true });

    const start = Date.now();
    const before = agent.snapshots;
    await sleep(3.5 * INTERVAL);
    const asked = agent.snapshots - before;
    const elapsed = Date.now() - start;
    // one per interval for both sockets together (two sockets each asking would be twice)
    expect(asked).toBeGreaterThanOrEqual(2);
    expect(asked).toBeLessThanOrEqual(Math.floor(elapsed / INTERVAL) + 1);
    // unchanged picture: not sent again
    expect(a.of(id)).toHaveLength(1);
    expect(b.of(id)).toHaveLength(1);

    // a paused socket asks nothing; both paused: no request at all
    a.send({ t: 'pause' });
    b.send({ t: 'pause' });
    await sleep(INTERVAL * 1.2); // one request may have been in flight when the pause came
    const paused = agent.snapshots;
    await sleep(INTERVAL * 2.5);
    expect(agent.snapshots).toBe(paused);

    b.send({ t: 'resume' });
    await waitFor(() => agent.snapshots > paused, 10_000, 'requests again');
    a.ws.close();
    b.ws.close();
    agent.ws.close();
  }, 30_000);

  it('a changed picture arrives; no signal and offline are state frames', async () => {
    const { id, agent } = await Agent.bound(admin);
    const offline = await bindByCode(kit, admin, identity());
    const w = await wall(admin);
    w.send({ t: 'watch', ids: [id, offline.device_id] });
    await waitFor(() => w.of(id).length === 1, 10_000, 'first picture');
    await waitFor(
      () => w.states.some((s) => s.id === offline.device_id && !s.online),
      10_000,
      'offline state',
    );
    expect(w.of(offline.device_id)).toHaveLength(0);

    agent.picture = Buffer.from('picture-2');
    await waitFor(() => w.of(id).length === 2, 10_000, 'second picture');
    expect(w.of(id)[1]!.jpeg.toString()).toBe('picture-2');

    agent.online = false;
    await waitFor(
      () => w.states.some((s) => s.id === id && s.online && !s.signal),
      10_000,
      'no signal',
    );
    w.ws.close();
    agent.ws.close();
  }, 30_000);

  it('an id the user does not see gets nothing; its own device does', async () => {
    const theirs = await Agent.bound(admin);
    const mine = await Agent.bound(user);
    const w = await wall(user);
    w.send({ t: 'watch', ids: [theirs.id, mine.id, 'no-such-device'] });
    await waitFor(() => w.of(mine.id).length === 1, 10_000, 'own picture');
    // a few intervals more: still nothing about the other account's device
    const before = theirs.agent.snapshots;
    await sleep(2 * INTERVAL);
    expect(w.pictures.filter((p) => p.id !== mine.id)).toEqual([]);
    expect(w.states.filter((s) => s.id !== mine.id)).toEqual([]);
    expect(theirs.agent.snapshots).toBe(before);
    w.ws.close();
    theirs.agent.ws.close();
    mine.agent.ws.close();
  }, 30_000);

  it('refuses before the upgrade: another origin, no session, too many sockets', async () => {
    expect((await Wall.open(admin, 'https://evil.example')).status).toBe(403);
    expect((await Wall.open(admin, null)).status).toBe(403);
    expect((await Wall.open(null)).status).toBe(401);
    const open: Wall[] = [];
    for (let i = 0; i < WALL_SOCKETS_PER_ACCOUNT; i += 1) open.push(await wall(user));
    expect((await Wall.open(user)).status).toBe(429);
    open[0]!.ws.close();
    const again = await waitFor(async () => (await Wall.open(user)).wall, 10_000, 'a slot again');
    for (const w of [...open, again]) w.ws.close();
  }, 30_000);

  it('closes a malformed frame or too many ids with 1008', async () => {
    for (const frame of [
      'not json',
      JSON.stringify({ t: 'watch' }),
      JSON.stringify({ t: 'watch', ids: [1] }),
      JSON.stringify({
        t: 'watch',
        ids: Array.from({ length: WALL_MAX_WATCH + 1 }, (_, i) => `d${i}`),
      }),
      JSON.stringify({ t: 'dance' }),
    ]) {
      const w = await wall(admin);
      w.ws.send(frame);
      await waitFor(() => w.closed !== null, 5000, 'closed');
      expect(w.closed).toBe(1008);
    }
  }, 30_000);
});
