/**
 * The Janus core against a recording plugin: what the core promises every plugin (plugin.ts),
 * over a real `/janus/ws` socket. The ustreamer plugin's own behaviour is gateway.test.ts.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import fastifyWebsocket from '@fastify/websocket';
import { afterEach, describe, expect, it } from 'vitest';
import { SILENT_LOGGER as silent } from '../log';
import { CLOSE_SESSION_ENDED } from '../ws/socket-guard';
import { JanusGateway, mountJanus } from './core';
import type { JanusPlugin, PluginHandle } from './plugin';
import { JanusRequestError, type Jsep } from './protocol';
import { JanusTestClient } from './test-support';

const NAME = 'janus.plugin.recorder';

/** Records every call; `hold` makes `message` wait until released. */
class RecordingPlugin implements JanusPlugin {
  readonly name = NAME;
  readonly info = { name: 'recorder', version_string: 'test' };
  readonly calls: string[] = [];
  peerCount = 0;
  closed = false;
  refuse: JanusRequestError | null = null;
  private held: (() => void) | null = null;
  hold = false;

  attach(h: PluginHandle): void {
    this.calls.push(`attach ${h.opaqueId ?? '-'}`);
  }

  admit(_h: PluginHandle, body: Record<string, unknown>, jsep: Jsep | null): void {
    this.calls.push(`admit ${String(body['request'])}${jsep ? ' +jsep' : ''}`);
    if (this.refuse) throw this.refuse;
  }

  async message(h: PluginHandle, body: Record<string, unknown>): Promise<void> {
    const what = String(body['request']);
    this.calls.push(`message ${what} start (pending ${h.pending})`);
    if (this.hold) await new Promise<void>((r) => (this.held = r));
    if (what === 'throw') throw new Error('plugin bug');
    h.push({ janus: 'event', plugindata: { plugin: NAME, data: { echo: what } } });
    this.calls.push(`message ${what} end`);
  }

  release(): void {
    this.hold = false;
    this.held?.();
    this.held = null;
  }

  trickle(_h: PluginHandle, candidates: readonly unknown[]): void {
    this.calls.push(`trickle ${candidates.length}`);
  }

  async hangup(_h: PluginHandle, reason: string): Promise<void> {
    this.calls.push(`hangup ${reason}`);
  }

  async detach(h: PluginHandle, notify: boolean): Promise<void> {
    this.calls.push(`detach ${notify} detached=${h.detached}`);
  }

  close(): void {
    this.closed = true;
  }
}

interface Rig {
  app: FastifyInstance;
  gateway: JanusGateway;
  plugin: RecordingPlugin;
  url: string;
}

const apps: FastifyInstance[] = [];
const clients: JanusTestClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const app of apps.splice(0)) await app.close();
});

async function rig(opts: { sessionTimeoutMs?: number; withAuth?: boolean } = {}): Promise<Rig> {
  const app = Fastify();
  apps.push(app);
  await app.register(fastifyWebsocket);
  if (opts.withAuth) {
    // What http/auth.ts's hook leaves on the request: the login session behind the socket.
    app.decorateRequest('auth', null);
    app.addHook('onRequest', async (request) => {
      request.auth = { user: 'admin', token: 'tok', tokenHash: 'hash-of-tok' };
    });
  }
  const plugin = new RecordingPlugin();
  const gateway = mountJanus(
    app,
    new JanusGateway({
      plugins: [plugin],
      log: silent,
      ...(opts.sessionTimeoutMs ? { sessionTimeoutMs: opts.sessionTimeoutMs } : {}),
    }),
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { app, gateway, plugin, url: `ws://127.0.0.1:${port}/janus/ws` };
}

async function client(r: Rig): Promise<JanusTestClient> {
  const c = await JanusTestClient.connect(r.url);
  clients.push(c);
  return c;
}

function attach(c: JanusTestClient): Promise<{ session: number; handle: number }> {
  return c.attach(NAME, 'oid-1');
}

describe('janus core with a plugin', () => {
  it('lists the plugins in server_info and refuses a name it does not have', async () => {
    const r = await rig();
    const c = await client(r);
    const info = await c.request({ janus: 'info' });
    expect(info['plugins']).toEqual({ [NAME]: { name: 'recorder', version_string: 'test' } });
    const { session } = await attach(c);
    const refused = await c.request({
      janus: 'attach',
      session_id: session,
      plugin: 'janus.plugin.ustreamer',
    });
    expect(refused).toMatchObject({ janus: 'error', error: { code: 460 } });
    expect(r.plugin.calls).toEqual(['attach oid-1']);
  });

  it('admits, replies success for the plugin, then runs the message; events carry ids', async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    const ok = await c.request({
      janus: 'message',
      session_id: ids.session,
      handle_id: ids.handle,
      body: { request: 'ping' },
    });
    expect(ok).toEqual({
      janus: 'success',
      session_id: ids.session,
      transaction: 't3',
      sender: ids.handle,
      plugindata: { plugin: NAME, data: { ok: true } },
    });
    expect(await c.next((m) => m.janus === 'event')).toEqual({
      janus: 'event',
      plugindata: { plugin: NAME, data: { echo: 'ping' } },
      session_id: ids.session,
      sender: ids.handle,
    });
    expect(r.plugin.calls).toEqual([
      'attach oid-1',
      'admit ping',
      'message ping start (pending 1)',
      'message ping end',
    ]);
  });

  it("answers a plugin's refusal in admit as the request's error, and never queues it", async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    r.plugin.refuse = new JanusRequestError(469, 'Unexpected ANSWER (did we offer?)');
    const refused = await c.request({
      janus: 'message',
      session_id: ids.session,
      handle_id: ids.handle,
      body: { request: 'start' },
      jsep: { type: 'answer', sdp: 'v=0\r\n' },
    });
    expect(refused).toEqual({
      janus: 'error',
      session_id: ids.session,
      transaction: 't3',
      error: { code: 469, reason: 'Unexpected ANSWER (did we offer?)' },
    });
    expect(r.plugin.calls).toEqual(['attach oid-1', 'admit start +jsep']);
  });

  it('checks body and jsep itself before the plugin sees them', async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    const base = { janus: 'message', session_id: ids.session, handle_id: ids.handle };
    expect(await c.request(base)).toMatchObject({ error: { code: 456 } });
    expect(await c.request({ ...base, body: [] })).toMatchObject({ error: { code: 467 } });
    expect(
      await c.request({ ...base, body: {}, jsep: { type: 'offer', sdp: 'v=0' } }),
    ).toMatchObject({ error: { code: 464 } });
    expect(
      await c.request({ ...base, body: {}, jsep: { type: 'answer', sdp: 'x' } }),
    ).toMatchObject({ error: { code: 465 } });
    expect(r.plugin.calls).toEqual(['attach oid-1']);
  });

  it('runs one handle’s calls one after another: hangup and detach wait for a message', async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    const base = { session_id: ids.session, handle_id: ids.handle };
    r.plugin.hold = true;
    await c.request({ janus: 'message', ...base, body: { request: 'slow' } });
    await c.request({ janus: 'hangup', ...base });
    await c.request({ janus: 'trickle', ...base, candidates: [{ candidate: 'a' }, {}] });
    await c.request({ janus: 'detach', ...base });
    // trickle is synchronous; hangup and detach are queued behind the held message
    expect(r.plugin.calls).toEqual([
      'attach oid-1',
      'admit slow',
      'message slow start (pending 1)',
      'trickle 2',
    ]);
    expect(r.gateway.handleCount).toBe(0);
    r.plugin.release();
    expect(await c.next((m) => m.janus === 'detached')).toEqual({
      janus: 'detached',
      session_id: ids.session,
      sender: ids.handle,
    });
    expect(r.plugin.calls.slice(4)).toEqual([
      'message slow end',
      'hangup Janus API',
      'detach true detached=true',
    ]);
  });

  it('logs a throwing plugin message and keeps serving the handle', async () => {
    const r = await rig();
    const c = await client(r);
    const ids = await attach(c);
    const base = { janus: 'message', session_id: ids.session, handle_id: ids.handle };
    await c.request({ ...base, body: { request: 'throw' } });
    await c.request({ ...base, body: { request: 'after' } });
    const event = await c.next((m) => m.janus === 'event');
    expect(event['plugindata']).toEqual({ plugin: NAME, data: { echo: 'after' } });
  });

  it('detaches without notice on destroy, timeout and socket close', async () => {
    const r = await rig({ sessionTimeoutMs: 200 });
    const c = await client(r);
    const a = await attach(c);
    await c.request({ janus: 'destroy', session_id: a.session });
    await expect.poll(() => r.plugin.calls.at(-1)).toBe('detach false detached=true');

    const b = await attach(c);
    const timeout = await c.next((m) => m.janus === 'timeout', 5_000);
    expect(timeout).toEqual({ janus: 'timeout', session_id: b.session });
    await expect.poll(() => r.gateway.sessionCount).toBe(0);

    const c2 = await client(r);
    await attach(c2);
    const before = r.plugin.calls.filter((x) => x.startsWith('detach')).length;
    await c2.close();
    await expect
      .poll(() => r.plugin.calls.filter((x) => x.startsWith('detach')).length)
      .toBe(before + 1);
    expect(r.gateway.sessionCount).toBe(0);
  });

  it('sums peer counts over plugins and closes them with the app', async () => {
    const r = await rig();
    r.plugin.peerCount = 3;
    expect(r.gateway.peerCount).toBe(3);
    await r.app.close();
    expect(r.plugin.closed).toBe(true);
  });

  it('files the socket under the login session the auth hook put on the request', async () => {
    const r = await rig({ withAuth: true });
    const c = await client(r);
    await attach(c);
    const closed = new Promise<number>((resolve) => c.ws.once('close', (code) => resolve(code)));
    r.gateway.endAuthSession('hash-of-tok');
    expect(await closed).toBe(CLOSE_SESSION_ENDED);
    await expect.poll(() => r.gateway.sessionCount).toBe(0);
  });
});
