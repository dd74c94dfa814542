/**
 * The fleet's relay against the DEVICE's real agent and tunnel (server/src/services/cloud/
 * agent.ts, tunnel.ts), built in parallel from the same contract (protocol/src/cloud.ts): the
 * agent connects, the console's requests and sockets go through the fleet into a small HTTP
 * and WebSocket server standing in for the device's own, 3 MiB each way, commands answer, an
 * unbinding on the fleet reaches the device.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { CloudAgent, type AgentLinkState } from '../../../server/src/services/cloud/agent';
import { Tunnel } from '../../../server/src/services/cloud/tunnel';
import { SILENT_LOGGER } from '../../../server/src/log';
import {
  FakeDirectory,
  IDENTITY,
  bigBody,
  startReplica,
  waitFor,
  type TestReplica,
} from './test-kit';

const MiB = 1 << 20;
const ME = { 'x-test-user': 'acc1', cookie: 'fleet_session=abc' };

let replica: TestReplica;
let device: Server;
let agent: CloudAgent;
let state: AgentLinkState = 'idle';
let revoked: string | null = null;
const seen: Array<{ url: string; cookie: string | undefined }> = [];

beforeAll(async () => {
  // The device's own server: records the cookie it got, echoes, uploads, downloads.
  device = createServer((req, res) => {
    seen.push({ url: req.url!, cookie: req.headers.cookie });
    if (req.url === '/api/info') {
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'auth_token=device' });
      res.end(JSON.stringify({ ok: true, result: { model: 'interop' } }));
      return;
    }
    if (req.url === '/upload') {
      const h = createHash('sha256');
      let n = 0;
      req.on('data', (c: Buffer) => {
        h.update(c);
        n += c.length;
      });
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ bytes: n, sha256: h.digest('hex') }));
      });
      return;
    }
    if (req.url?.startsWith('/big')) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(bigBody(3 * MiB));
      return;
    }
    res.writeHead(404).end();
  });
  const wss = new WebSocketServer({
    server: device,
    handleProtocols: (protocols) => (protocols.has('janus-protocol') ? 'janus-protocol' : false),
  });
  wss.on('connection', (ws) => ws.on('message', (d, isBinary) => ws.send(d, { binary: isBinary })));
  await new Promise<void>((r) => device.listen(0, '127.0.0.1', r));
  const devicePort = (device.address() as { port: number }).port;

  const dir = new FakeDirectory();
  dir.add('dev1', 'acc1');
  replica = await startReplica(dir, 'fleet-a');
  const tunnel = new Tunnel({
    local: () => ({ origin: `http://127.0.0.1:${devicePort}`, cert: null }),
    sessions: { tokenFor: async (user) => `session-of-${user}` },
    log: SILENT_LOGGER,
  });
  agent = new CloudAgent({
    credentials: () => ({
      deviceId: 'dev1',
      secret: 'secret-dev1',
      endpoints: [replica.relay.endpoints()[0]!],
    }),
    trust: () => ({ pinned: null, pinnedCert: null }),
    identity: async () => IDENTITY,
    version: '1.0',
    log: SILENT_LOGGER,
    tunnel,
    onRevoked: (by) => {
      revoked = by;
    },
    onTurn: () => undefined,
    onState: (s) => {
      state = s;
    },
    onEndpoints: () => undefined,
    command: async (name) => ({ answered: name }),
  });
  tunnel.attach({
    control: (frame) => agent.sendRaw(JSON.stringify(frame)),
    binary: (frame) => agent.sendRaw(frame),
  });
  agent.start();
  await waitFor(() => state === 'online', 10_000, 'the device agent online');
});

afterAll(async () => {
  agent?.stop();
  await replica?.close();
  await new Promise((r) => device?.close(r));
});

describe('the relay with the device agent', () => {
  it('an API call reaches the device with its own session, not the fleet cookie; Set-Cookie stays off', async () => {
    const res = await fetch(`${replica.url}/d/dev1/api/info`, { headers: ME });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, result: { model: 'interop' } });
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(seen.at(-1)).toEqual({ url: '/api/info', cookie: 'auth_token=session-of-user-acc1' });
  });

  it('3 MiB up and 3 MiB down', async () => {
    const up = Buffer.alloc(3 * MiB);
    for (let i = 0; i < up.length; i += 1) up[i] = (i * 31) & 0xff;
    const res = await fetch(`${replica.url}/d/dev1/upload`, {
      method: 'POST',
      headers: { ...ME, 'content-type': 'application/octet-stream' },
      body: up,
    });
    expect(await res.json()).toEqual({
      bytes: up.length,
      sha256: createHash('sha256').update(up).digest('hex'),
    });
    const down = Buffer.from(
      await (await fetch(`${replica.url}/d/dev1/big`, { headers: ME })).arrayBuffer(),
    );
    expect(down.equals(bigBody(3 * MiB))).toBe(true);
  });

  it('a WebSocket with its subprotocol, text and binary', async () => {
    const ws = new WebSocket(
      `${replica.url.replace('http', 'ws')}/d/dev1/janus/ws`,
      ['janus-protocol'],
      { headers: ME },
    );
    await new Promise((res, rej) => {
      ws.on('open', res);
      ws.on('error', rej);
    });
    expect(ws.protocol).toBe('janus-protocol');
    const got: Array<[boolean, string]> = [];
    ws.on('message', (d, isBinary) => got.push([isBinary, (d as Buffer).toString()]));
    ws.send('text');
    ws.send(Buffer.from('bytes'));
    await waitFor(() => got.length === 2, 5000, 'echoes');
    expect(got).toEqual([
      [false, 'text'],
      [true, 'bytes'],
    ]);
    ws.close();
    await waitFor(
      () => replica.relay.localConnection('dev1')!.openStreams === 0,
      5000,
      'stream ended',
    );
  });

  it('commands answer; unbinding on the fleet reaches the device', async () => {
    expect(await replica.relay.command('dev1', 'info')).toEqual({ answered: 'info' });
    await replica.relay.notifyUnbound('dev1');
    await waitFor(() => revoked, 5000, 'the device told');
  });
});
