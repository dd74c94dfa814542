import { X509Certificate } from 'node:crypto';
import { readFile, rm, stat } from 'node:fs/promises';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AGENT_MAX_FRAME,
  decodeStreamFrame,
  encodeStreamFrame,
  STREAM_KIND,
  type AgentControl,
} from '@kvm/protocol';
import { buildApp, createContext } from '../app';
import { buildConfig } from '../config';
import type { AppContext } from '../context';
import { loadConfigDefaults } from '../paths';
import { until } from '../platform/qemu/test-support';
import { newTotpSecret, totp } from '../services/auth/totp';
import {
  FakeFleet,
  FLEET_TURN,
  FLEET_USER,
  type AgentPeer,
} from '../services/cloud/fleet-test-kit';
import { loadOrCreateCertificate } from '../services/tls';
import { initAndLogin, PASSWORD, tempDataDir } from '../test-helpers';

interface Device {
  app: FastifyInstance;
  ctx: AppContext;
  dataDir: string;
  token: string;
}

let certs: string;
let fleet: FakeFleet | null = null;
let device: Device | null = null;
const extra: NetServer[] = [];

beforeAll(async () => {
  certs = await tempDataDir();
});
afterAll(async () => {
  await rm(certs, { recursive: true, force: true });
});
afterEach(async () => {
  await device?.app.close();
  if (device) await rm(device.dataDir, { recursive: true, force: true });
  device = null;
  await fleet?.close();
  fleet = null;
  for (const s of extra.splice(0)) await new Promise((r) => s.close(r));
});

/** The device's real app over https on loopback (the tunnel's target), initialised, logged in. */
async function startDevice(cloud: Record<string, unknown> = {}): Promise<Device> {
  const dataDir = await tempDataDir();
  const tls = await loadOrCreateCertificate(join(dataDir, 'tls'));
  const config = buildConfig(
    {
      data_dir: dataDir,
      target: 'testbed',
      webrtc: { stun_url: 'stun:127.0.0.1:3478' },
      terminal: { shell: '/bin/bash', args: ['--noprofile', '--norc'] },
      cloud,
    },
    loadConfigDefaults(),
  );
  const ctx = await createContext(config, '0.0.0-test');
  const app = await buildApp(ctx, { https: tls });
  await app.listen({ host: '127.0.0.1', port: 0 });
  device = { app, ctx, dataDir, token: await initAndLogin(app) };
  return device;
}

async function call(
  d: Device,
  method: 'GET' | 'POST',
  url: string,
  payload?: Record<string, unknown>,
): Promise<{ status: number; body: { ok: boolean; result: Record<string, unknown> } }> {
  const res = await d.app.inject({
    method,
    url,
    headers: { token: d.token },
    ...(payload ? { payload } : {}),
  });
  return { status: res.statusCode, body: res.json() };
}

async function fingerprintOf(dir: string): Promise<string> {
  return new X509Certificate(await readFile(join(dir, 'server.crt'))).fingerprint256;
}

/** Enabled, the fake fleet probed and pinned. */
async function pinned(d: Device): Promise<FakeFleet> {
  fleet = await FakeFleet.start(join(certs, 'a'));
  expect((await call(d, 'POST', '/api/cloud/enable', { enable: true })).status).toBe(200);
  const probe = await call(d, 'POST', '/api/cloud/server', { url: fleet.url });
  expect(probe.status).toBe(200);
  expect(probe.body.result).toMatchObject({ url: fleet.url, trusted: false });
  const trust = await call(d, 'POST', '/api/cloud/trust', {
    fingerprint: probe.body.result['fingerprint'],
  });
  expect(trust.status).toBe(200);
  return fleet;
}

async function status(d: Device): Promise<Record<string, unknown>> {
  return (await call(d, 'GET', '/api/cloud/status')).body.result;
}

/** Bound by login and online. */
async function online(d: Device): Promise<{ fleet: FakeFleet; peer: AgentPeer }> {
  const f = await pinned(d);
  const bound = await call(d, 'POST', '/api/cloud/bind/login', {
    username: FLEET_USER.username,
    password: FLEET_USER.password,
    region: 'eu',
  });
  expect(bound.status).toBe(200);
  await until('online', async () => (await status(d))['state'] === 'online');
  return { fleet: f, peer: f.current()! };
}

function frames(peer: AgentPeer, sid: number): AgentControl[] {
  return peer.frames.filter((f) => 'sid' in f && f.sid === sid);
}

function head(peer: AgentPeer, sid: number): AgentControl | undefined {
  return frames(peer, sid).find((f) => f.t === 'head');
}

function body(peer: AgentPeer, sid: number): Buffer {
  return Buffer.concat(
    peer.binary
      .map((b) => decodeStreamFrame(b))
      .filter((f) => f !== null && f.sid === sid)
      .map((f) => Buffer.from(f!.payload)),
  );
}

describe('cloud panel: switch, server, pin', () => {
  it('is off by default and refuses to call any fleet while off', async () => {
    const d = await startDevice();
    expect(await status(d)).toMatchObject({ enabled: false, bound: false, state: 'disabled' });
    const res = await call(d, 'POST', '/api/cloud/server', { url: 'https://127.0.0.1:9' });
    expect(res.status).toBe(409);
    expect(res.body.result['error']).toBe('CloudDisabledError');
    expect((await call(d, 'POST', '/api/cloud/bind/code')).status).toBe(409);
  });

  it('refuses bad input with 400 and names the field (SPEC 5)', async () => {
    const d = await startDevice();
    await call(d, 'POST', '/api/cloud/enable', { enable: true });
    for (const url of ['http://example.org', 'ftp://x', 'https://u:p@host', 42]) {
      const res = await call(d, 'POST', '/api/cloud/server', { url });
      expect(res.status, String(url)).toBe(400);
    }
    const login = await call(d, 'POST', '/api/cloud/bind/login', {
      username: FLEET_USER.username,
      password: 'abc',
      region: 'eu',
    });
    expect(login.status).toBe(400);
    expect(login.body.result).toMatchObject({ field: 'password', reason: 'password_length' });
    const signup = await call(d, 'POST', '/api/cloud/signup', {
      username: '_bad',
      email: 'a@b.c',
      email_code: '123456',
      password: 'secret1',
      password2: 'secret1',
      privacy: true,
      region: 'eu',
    });
    expect(signup.status).toBe(400);
    expect(signup.body.result).toMatchObject({ field: 'username', reason: 'username_invalid' });
    expect((await call(d, 'POST', '/api/cloud/enable', { enable: 'maybe' })).status).toBe(400);
    expect((await call(d, 'POST', '/api/cloud/trust', { fingerprint: 'zz' })).status).toBe(400);
  });

  it('answers 502 when the fleet is unreachable and 504 when it does not answer in time', async () => {
    const d = await startDevice({ timeout_ms: 1000 });
    await call(d, 'POST', '/api/cloud/enable', { enable: true });
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const refused = await call(d, 'POST', '/api/cloud/server', {
      url: `https://127.0.0.1:${closedPort}`,
    });
    expect(refused.status).toBe(502);
    // accepts the connection, never says a word
    const held: Socket[] = [];
    const silent = createServer((socket) => held.push(socket));
    extra.push(silent);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const slow = await call(d, 'POST', '/api/cloud/server', {
      url: `https://127.0.0.1:${(silent.address() as AddressInfo).port}`,
    });
    for (const socket of held) socket.destroy();
    expect(slow.status).toBe(504);
    expect(slow.body.result['error']).toBe('CloudTimeoutError');
  });

  it('pins only the certificate the probe showed; a changed certificate is refused', async () => {
    const d = await startDevice();
    fleet = await FakeFleet.start(join(certs, 'a'));
    await call(d, 'POST', '/api/cloud/enable', { enable: true });
    const probe = await call(d, 'POST', '/api/cloud/server', { url: fleet.url });
    expect(probe.body.result['fingerprint']).toBe(await fingerprintOf(join(certs, 'a')));
    // a fingerprint other than the one shown is not pinned
    const other = await fingerprintOf(join(certs, 'b-')).catch(async () => {
      await loadOrCreateCertificate(join(certs, 'b'));
      return fingerprintOf(join(certs, 'b'));
    });
    expect((await call(d, 'POST', '/api/cloud/trust', { fingerprint: other })).status).toBe(400);
    // before the pin, the fleet's own certificate is not trusted: no call goes through
    const early = await call(d, 'POST', '/api/cloud/bind/code');
    expect(early.status).toBe(502);
    expect(String(early.body.result['error_msg'])).toMatch(/not trusted/);
    const fp = String(probe.body.result['fingerprint']).toLowerCase();
    expect((await call(d, 'POST', '/api/cloud/trust', { fingerprint: fp })).status).toBe(200);
    expect((await status(d))['pinned']).toBe(probe.body.result['fingerprint']);
    const bound = await call(d, 'POST', '/api/cloud/bind/login', { ...FLEET_USER, region: 'eu' });
    expect(bound.status).toBe(200);
    await until('online', async () => (await status(d))['state'] === 'online');
    // the fleet comes back with another certificate on the same port
    const port = fleet.port;
    await fleet.close();
    const before = fleet.agents.length;
    await fleet.listen(join(certs, 'b'), port);
    await until(
      'offline, certificate changed',
      async () => {
        const s = await status(d);
        return s['state'] === 'offline' && /certificate changed/.test(String(s['error']));
      },
      15_000,
    );
    expect(fleet.agents.length).toBe(before);
    expect(JSON.stringify(await status(d))).not.toContain(fleet.secret);
  });
});

describe('binding', () => {
  it('binds by login: online, the secret kept 0600 and never shown, TURN merged', async () => {
    const d = await startDevice();
    const wrong = await pinned(d).then(() =>
      call(d, 'POST', '/api/cloud/bind/login', {
        ...FLEET_USER,
        password: 'wrong12',
        region: 'eu',
      }),
    );
    expect(wrong.status).toBe(403);
    expect(String(wrong.body.result['error_msg'])).toContain('wrong password');
    // the fleet asks for its account's 2FA code: passed on for the panel (never a 401 here)
    const totp = await call(d, 'POST', '/api/cloud/bind/login', {
      username: 'totpuser',
      password: 'secret1',
      region: 'eu',
    });
    expect(totp.status).toBe(403);
    expect(totp.body.result).toMatchObject({ totp_required: true });
    const ok = await call(d, 'POST', '/api/cloud/bind/login', { ...FLEET_USER, region: 'eu' });
    expect(ok.status).toBe(200);
    await until('online', async () => (await status(d))['state'] === 'online');
    const s = await status(d);
    expect(s).toMatchObject({
      enabled: true,
      bound: true,
      replica: 'replica-a',
      account: { username: FLEET_USER.username, email: FLEET_USER.email },
      device: { id: 'dev-0001' },
    });
    const peer = fleet!.current()!;
    expect(peer.headers['authorization']).toBe(`Device dev-0001:${fleet!.secret}`);
    expect(peer.headers['x-kvm-device-serial']).toMatch(/^[0-9A-F]{4}(-[0-9A-F]{4}){3}$/);
    expect(peer.frames[0]).toMatchObject({ t: 'hello', version: '0.0.0-test' });
    // the secret: in the file (0600), in no answer
    const file = join(d.dataDir, 'cloud.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file, 'utf8')).toContain(fleet!.secret);
    for (const url of ['/api/cloud/status', '/api/astrowarp/status']) {
      expect(JSON.stringify((await call(d, 'GET', url)).body)).not.toContain(fleet!.secret);
    }
    expect((await call(d, 'GET', '/api/astrowarp/status')).body.result).toMatchObject({
      result: 'success',
      enabled: true,
      status: { username: FLEET_USER.username, email: FLEET_USER.email },
    });
    // the fleet's TURN credentials are the turn state while online
    const turn = (await call(d, 'GET', '/api/turn/get_turn')).body.result;
    expect(turn).toMatchObject({ username: FLEET_TURN.username, password: FLEET_TURN.password });
    expect(turn['uris']).toEqual([...FLEET_TURN.uris, 'stun:127.0.0.1:3478']);
    // binding again while bound is a conflict
    expect((await call(d, 'POST', '/api/cloud/bind/code')).status).toBe(409);
    // off: the agent stops, the fleet's TURN goes
    await call(d, 'POST', '/api/cloud/enable', { enable: false });
    expect(await status(d)).toMatchObject({ state: 'disabled', bound: true });
    expect((await call(d, 'GET', '/api/turn/get_turn')).body.result['uris']).toEqual([
      'stun:127.0.0.1:3478',
    ]);
    await until('socket closed', () => peer.closed !== null);
  });

  it('binds by code: the background poll collects the binding once the code is claimed', async () => {
    const d = await startDevice();
    const f = await pinned(d);
    const code = await call(d, 'POST', '/api/cloud/bind/code');
    expect(code.body.result).toEqual({ code: '12345678', expires_in: 60 });
    expect(f.calls.find((c) => c.path === 'bind/codes')?.body['device']).toMatchObject({
      model: 'RM1',
      version: '0.0.0-test',
    });
    // GL's name answers the live code
    const gl = await call(d, 'GET', '/api/astrowarp/get_dynamic_code');
    expect(gl.body.result['code']).toBe('12345678');
    const link = await call(d, 'GET', '/api/astrowarp/get_bind_link');
    expect(link.body.result).toMatchObject({
      link: `${f.url}/?code=12345678#devices`,
      code: '12345678',
    });
    await until('polling', () => f.calls.filter((c) => c.path === 'bind/poll').length >= 2);
    expect((await status(d))['bound']).toBe(false);
    f.claimed = true;
    await until('bound and online', async () => (await status(d))['state'] === 'online');
    expect(f.calls.at(-1)?.body).toEqual({ claim_token: 'claim-token-1' });
  });

  it('forgets a binding the fleet revoked (401 X-Kvm-Binding: revoked)', async () => {
    const d = await startDevice();
    const { fleet: f, peer } = await online(d);
    f.agentMode = 'revoked';
    peer.ws.terminate();
    await until('revoked', async () => (await status(d))['state'] === 'revoked', 15_000);
    expect(await status(d)).toMatchObject({ bound: false, account: null, device: { id: null } });
    expect(await readFile(join(d.dataDir, 'cloud.json'), 'utf8')).not.toContain(f.secret);
  });

  it('unbinds while offline by telling the fleet over HTTP with its own credentials', async () => {
    const d = await startDevice();
    const { fleet: f, peer } = await online(d);
    f.agentMode = 'forbidden';
    peer.ws.terminate();
    await until('offline', async () => {
      const s = await status(d);
      return s['state'] === 'offline' && /403/.test(String(s['error']));
    });
    const res = await call(d, 'POST', '/api/cloud/unbind', { passwd: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body.result).toMatchObject({ bound: false, state: 'unbound' });
    expect(f.calls.find((c) => c.path === 'device/unbind')?.authorization).toBe(
      `Device dev-0001:${f.secret}`,
    );
  });

  it("answers the fleet's commands: info, snapshot, unknown, unbind", async () => {
    const d = await startDevice();
    const { peer } = await online(d);
    const cmd = (id: number, name: string): void =>
      peer.ws.send(JSON.stringify({ t: 'cmd', id, name } as AgentControl));
    const res = (id: number): AgentControl | undefined =>
      peer.frames.find((f) => f.t === 'res' && f.id === id);
    cmd(1, 'info');
    cmd(2, 'snapshot');
    cmd(3, 'format-disk');
    await until('answers', () => res(1) && res(2) && res(3));
    expect(res(1)).toMatchObject({
      ok: true,
      result: { version: '0.0.0-test', model: 'RM1', identity: { model: 'RM1' } },
    });
    const snap = res(2) as Extract<AgentControl, { t: 'res' }>;
    if (snap.ok) {
      const jpeg = Buffer.from((snap.result as { jpeg: string }).jpeg, 'base64');
      expect([...jpeg.subarray(0, 2)]).toEqual([0xff, 0xd8]);
    } else {
      expect(snap.error).toBe('unavailable');
    }
    expect(res(3)).toMatchObject({ ok: false, error: 'unknown_command' });
    cmd(4, 'unbind');
    await until('revoked', async () => (await status(d))['state'] === 'revoked');
    expect(res(4)).toMatchObject({ ok: true });
  });

  it('forgets the binding when the fleet sends unbound', async () => {
    const d = await startDevice();
    const { peer } = await online(d);
    peer.ws.send(JSON.stringify({ t: 'unbound', by: 'fleet' } satisfies AgentControl));
    await until('revoked', async () => (await status(d))['state'] === 'revoked');
  });

  it('unbinds with the admin password plus the 2FA code when 2FA is on', async () => {
    const d = await startDevice();
    const { fleet: f, peer } = await online(d);
    // a console session through the cloud exists; the unbinding must end it
    await openHttp(peer, 1, 'GET', '/api/info');
    await until('answered', () => frames(peer, 1).some((x) => x.t === 'end'));
    expect(d.ctx.cloud.sessions.users).toEqual([FLEET_USER.username]);
    const secret = newTotpSecret();
    await d.ctx.auth.enableTwoFa(secret, totp(secret));
    const next = totp(secret, Date.now() + 30_000);
    for (const args of [
      { passwd: 'wrong password' },
      { passwd: PASSWORD },
      { passwd: PASSWORD, code: next === '000000' ? '111111' : '000000' },
    ]) {
      const res = await call(d, 'POST', '/api/cloud/unbind', args);
      expect(res.status, JSON.stringify(args)).toBe(403);
      expect(res.body.result).toMatchObject({ error_msg: 'unbind failed' });
    }
    expect((await status(d))['bound']).toBe(true);
    const res = await call(d, 'POST', '/api/cloud/unbind', { passwd: PASSWORD, code: next });
    expect(res.status).toBe(200);
    expect(res.body.result).toMatchObject({ bound: false, state: 'unbound' });
    await until('told the fleet', () => peer.frames.some((x) => x.t === 'unbound'));
    expect(peer.frames.find((x) => x.t === 'unbound')).toEqual({ t: 'unbound', by: 'device' });
    expect(d.ctx.cloud.sessions.users).toEqual([]);
    expect(await readFile(join(d.dataDir, 'cloud.json'), 'utf8')).not.toContain(f.secret);
  });
});

async function openHttp(
  peer: AgentPeer,
  sid: number,
  method: string,
  path: string,
  payload?: string,
): Promise<void> {
  const headers: Record<string, string> = {
    // what a browser would send; the device replaces the cookie and drops the origin
    cookie: 'fleet_session=abc',
    origin: 'https://fleet.example',
    'sec-fetch-site': 'same-origin',
  };
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  peer.ws.send(
    JSON.stringify({
      t: 'open',
      sid,
      kind: 'http',
      method,
      path,
      headers,
      user: { id: 'u1', name: FLEET_USER.username },
    } satisfies AgentControl),
  );
  if (payload !== undefined) {
    peer.ws.send(encodeStreamFrame(sid, STREAM_KIND.data, Buffer.from(payload)));
    peer.ws.send(JSON.stringify({ t: 'end', sid } satisfies AgentControl));
  }
}

describe('the tunnel into the local server', () => {
  it('carries HTTP both ways under a console session of cloud:<fleet user>', async () => {
    const d = await startDevice();
    const { peer } = await online(d);
    await openHttp(peer, 1, 'GET', '/api/info');
    await until('end of 1', () => frames(peer, 1).some((x) => x.t === 'end'));
    expect(head(peer, 1)).toMatchObject({ sid: 1, status: 200 });
    const info = JSON.parse(body(peer, 1).toString('utf8')) as { ok: boolean };
    expect(info.ok).toBe(true);
    expect(JSON.stringify(head(peer, 1))).not.toContain('set-cookie');
    // a request body goes through too (and is acknowledged)
    await openHttp(peer, 2, 'POST', '/api/cloud/enable', JSON.stringify({ enable: true }));
    await until('end of 2', () => frames(peer, 2).some((x) => x.t === 'end'));
    expect(head(peer, 2)).toMatchObject({ status: 200 });
    expect(frames(peer, 2).some((x) => x.t === 'ack')).toBe(true);
    expect(d.ctx.cloud.sessions.users).toEqual([FLEET_USER.username]);
    // one session per fleet user, reused
    await openHttp(peer, 3, 'GET', '/api/auth/check');
    await until('end of 3', () => frames(peer, 3).some((x) => x.t === 'end'));
    expect(head(peer, 3)).toMatchObject({ status: 200 });
    // a user name that is no fleet user's is refused before any session is made
    peer.ws.send(
      JSON.stringify({
        t: 'open',
        sid: 4,
        kind: 'http',
        method: 'GET',
        path: '/api/info',
        headers: {},
        user: { id: 'x', name: '../admin' },
      } satisfies AgentControl),
    );
    await until('end of 4', () => frames(peer, 4).some((x) => x.t === 'end'));
    expect(head(peer, 4)).toMatchObject({ status: 403 });
  });

  it('carries a WebSocket (/api/ws) with its messages and its close', async () => {
    const d = await startDevice();
    const { peer } = await online(d);
    peer.ws.send(
      JSON.stringify({
        t: 'open',
        sid: 7,
        kind: 'ws',
        method: 'GET',
        path: '/api/ws?stream=0',
        headers: { origin: 'https://fleet.example' },
        user: { id: 'u1', name: FLEET_USER.username },
        protocols: [],
      } satisfies AgentControl),
    );
    await until('101', () => frames(peer, 7).some((x) => x.t === 'head'));
    expect(head(peer, 7)).toMatchObject({ status: 101 });
    await until('events', () => body(peer, 7).toString('utf8').includes('"event_type":"cloud"'));
    // the snapshot's cloud event: this very connection, online
    expect(body(peer, 7).toString('utf8')).toMatch(
      /"event_type":"cloud","event":\{[^}]*"state":"online"/,
    );
    const kinds = peer.binary.map((b) => decodeStreamFrame(b)).filter((f) => f?.sid === 7);
    expect(kinds.every((f) => f!.kind === STREAM_KIND.text)).toBe(true);
    // the console's ping goes in, its pong comes out
    peer.ws.send(
      encodeStreamFrame(7, STREAM_KIND.text, Buffer.from('{"event_type":"ping","event":{}}')),
    );
    await until('pong', () => body(peer, 7).toString('utf8').includes('pong'));
    peer.ws.send(JSON.stringify({ t: 'end', sid: 7, code: 1000 } satisfies AgentControl));
    // the receiver of `end` does not answer it: the stream is over on both sides
    await until('closed', () => d.ctx.cloud.tunnel.size === 0);
    // and a socket the device's server closes ends its stream toward the fleet
    peer.ws.send(
      JSON.stringify({
        t: 'open',
        sid: 8,
        kind: 'ws',
        method: 'GET',
        path: '/api/ws?stream=0',
        headers: {},
        user: { id: 'u1', name: FLEET_USER.username },
      } satisfies AgentControl),
    );
    await until('101 of 8', () => head(peer, 8) !== undefined);
    await d.ctx.cloud.sessions.endAll('logout');
    await until('end of 8', () => frames(peer, 8).some((x) => x.t === 'end'));
    // every console socket opens under the cloud session, with its subprotocol
    const sockets: Array<[number, string, string[], string]> = [
      [10, '/janus/ws', ['janus-protocol'], 'janus-protocol'],
      [11, '/api/media/ws', [], ''],
      [12, '/extras/webterm/ttyd/ws', ['tty'], 'tty'],
      [13, '/api/terminal/ws', ['tty'], 'tty'],
    ];
    for (const [sid, path, protocols] of sockets) {
      peer.ws.send(
        JSON.stringify({
          t: 'open',
          sid,
          kind: 'ws',
          method: 'GET',
          path,
          headers: {},
          user: { id: 'u1', name: FLEET_USER.username },
          protocols,
        } satisfies AgentControl),
      );
    }
    for (const [sid, path, , protocol] of sockets) {
      await until(`head of ${path}`, () => head(peer, sid) !== undefined);
      expect(head(peer, sid), path).toMatchObject({ status: 101, protocol });
    }
  });
});

describe('a misbehaving fleet', () => {
  it('closes on malformed (1008) and oversized (1009) frames; the device keeps working', async () => {
    const d = await startDevice();
    const { fleet: f, peer } = await online(d);
    peer.ws.send('this is not a frame');
    await until('1008', () => peer.closed !== null);
    expect(peer.closed?.code).toBe(1008);
    await until('back online', () => f.agents.length === 2 && f.current() !== null, 15_000);
    const second = f.current()!;
    second.ws.send(Buffer.alloc(3)); // a binary frame shorter than its header
    await until('1008 again', () => second.closed !== null);
    expect(second.closed?.code).toBe(1008);
    await until('online again', () => f.agents.length === 3 && f.current() !== null, 15_000);
    const third = f.current()!;
    third.ws.send('x'.repeat(AGENT_MAX_FRAME + 1));
    await until('1009', () => third.closed !== null);
    expect(third.closed?.code).toBe(1009);
    expect((await call(d, 'GET', '/api/info')).status).toBe(200);
    expect((await call(d, 'GET', '/api/cloud/status')).status).toBe(200);
  });
});
