/**
 * Janus's optional `apisecret` and `token` (SPEC 7, janus.jcfg `api_secret` / `token_auth`) on
 * `/janus/ws`: accepted always, required when configured, 403 "Unauthorized request (wrong or
 * missing secret/token)" otherwise, `info` and `ping` answered to anyone (as Janus does).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import fastifyWebsocket from '@fastify/websocket';
import { afterEach, describe, expect, it } from 'vitest';
import { JANUS_UNAUTHORIZED_REASON, type JanusAuthOptions } from './core';
import { janusFeatures, registerJanus } from './gateway';
import { FakeFeed, JanusTestClient } from './test-support';
import { initAndLogin, newApp } from '../test-helpers';

const PLUGIN = 'janus.plugin.ustreamer';
const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const TOKEN = 'a'.repeat(64);

const apps: FastifyInstance[] = [];
const clients: JanusTestClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const a of apps.splice(0)) await a.close();
});

/** A gateway whose sockets belong to a login session with TOKEN (as the auth hook sets it). */
async function gateway(auth?: JanusAuthOptions): Promise<{ app: FastifyInstance; url: string }> {
  const app = Fastify();
  await app.register(fastifyWebsocket);
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (request) => {
    request.auth = { user: 'admin', token: TOKEN, tokenHash: 'h'.repeat(64) };
  });
  registerJanus(app, {
    feed: new FakeFeed(),
    iceServers: () => [],
    features: () => janusFeatures([]),
    onInput: () => undefined,
    onViewerGone: () => undefined,
    log: silent,
    ...(auth ? { auth } : {}),
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  apps.push(app);
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { app, url: `ws://127.0.0.1:${port}/janus/ws` };
}

async function client(url: string): Promise<JanusTestClient> {
  const c = await JanusTestClient.connect(url);
  clients.push(c);
  return c;
}

const UNAUTHORIZED = { janus: 'error', error: { code: 403, reason: JANUS_UNAUTHORIZED_REASON } };

describe('Janus apisecret and token', () => {
  it('accepts apisecret and token when none is configured (janus.js sends them when given)', async () => {
    const { url } = await gateway();
    const c = await client(url);
    const created = await c.request({ janus: 'create', apisecret: 'anything', token: 'x' });
    expect(created['janus']).toBe('success');
    const session = (created['data'] as { id: number }).id;
    const attached = await c.request({
      janus: 'attach',
      session_id: session,
      plugin: PLUGIN,
      apisecret: 'anything',
    });
    expect(attached['janus']).toBe('success');
  });

  it('with api_secret: every request needs it; a wrong or missing one is 403', async () => {
    const { url } = await gateway({ apiSecret: 's3cret', tokenAuth: false });
    const c = await client(url);
    // Janus answers info and ping without it.
    expect((await c.request({ janus: 'info' }))['janus']).toBe('server_info');
    expect((await c.request({ janus: 'ping' }))['janus']).toBe('pong');

    expect(await c.request({ janus: 'create' })).toMatchObject(UNAUTHORIZED);
    expect(await c.request({ janus: 'create', apisecret: 'wrong' })).toMatchObject(UNAUTHORIZED);
    expect(await c.request({ janus: 'create', apisecret: 7 })).toMatchObject(UNAUTHORIZED);
    // The session token does not stand in for the secret when token_auth is off.
    expect(await c.request({ janus: 'create', token: TOKEN })).toMatchObject(UNAUTHORIZED);

    const created = await c.request({ janus: 'create', apisecret: 's3cret' });
    expect(created['janus']).toBe('success');
    const session = (created['data'] as { id: number }).id;
    // Session-level requests need it too, and the refusal names the session.
    const refused = await c.request({ janus: 'keepalive', session_id: session });
    expect(refused).toMatchObject({ ...UNAUTHORIZED, session_id: session });
    expect(await c.request({ janus: 'attach', session_id: session, plugin: PLUGIN })).toMatchObject(
      UNAUTHORIZED,
    );
    expect(
      (await c.request({ janus: 'keepalive', session_id: session, apisecret: 's3cret' }))['janus'],
    ).toBe('ack');
    const attached = await c.request({
      janus: 'attach',
      session_id: session,
      plugin: PLUGIN,
      apisecret: 's3cret',
    });
    expect(attached['janus']).toBe('success');
    const handle = (attached['data'] as { id: number }).id;
    expect(
      await c.request({ janus: 'message', session_id: session, handle_id: handle, body: {} }),
    ).toMatchObject(UNAUTHORIZED);
    expect(
      await c.request({ janus: 'destroy', session_id: session, apisecret: 'S3CRET' }),
    ).toMatchObject(UNAUTHORIZED);
    expect(
      (await c.request({ janus: 'destroy', session_id: session, apisecret: 's3cret' }))['janus'],
    ).toBe('success');
  });

  it("with token_auth: the socket's own session token is required as token", async () => {
    const { url } = await gateway({ apiSecret: null, tokenAuth: true });
    const c = await client(url);
    expect(await c.request({ janus: 'create' })).toMatchObject(UNAUTHORIZED);
    expect(await c.request({ janus: 'create', token: 'b'.repeat(64) })).toMatchObject(UNAUTHORIZED);
    const created = await c.request({ janus: 'create', token: TOKEN });
    expect(created['janus']).toBe('success');
    const session = (created['data'] as { id: number }).id;
    expect(
      (await c.request({ janus: 'attach', session_id: session, plugin: PLUGIN, token: TOKEN }))[
        'janus'
      ],
    ).toBe('success');
  });

  it('with both configured, either a right apisecret or a right token passes (as in Janus)', async () => {
    const { url } = await gateway({ apiSecret: 's3cret', tokenAuth: true });
    const c = await client(url);
    expect((await c.request({ janus: 'create', apisecret: 's3cret' }))['janus']).toBe('success');
    expect((await c.request({ janus: 'create', token: TOKEN }))['janus']).toBe('success');
    expect(await c.request({ janus: 'create', apisecret: 'nope', token: 'nope' })).toMatchObject(
      UNAUTHORIZED,
    );
  });

  it('GET /api/janus/auth tells the console what to hand janus.js', async () => {
    const { app } = await gateway({ apiSecret: 's3cret', tokenAuth: true });
    const res = await app.inject({ method: 'GET', url: '/api/janus/auth' });
    expect(res.json()).toEqual({ apisecret: 's3cret', token_auth: true });
    const { app: plain } = await gateway();
    const none = await plain.inject({ method: 'GET', url: '/api/janus/auth' });
    expect(none.json()).toEqual({ apisecret: null, token_auth: false });
  });

  it('comes from the config on the real server: webrtc.janus_api_secret and janus_token_auth', async () => {
    const app = await newApp(undefined, {
      webrtc: { stun_url: null, janus_api_secret: 'cfg-secret', janus_token_auth: true },
    });
    apps.push(app);
    const token = await initAndLogin(app);
    expect((await app.inject({ url: '/api/janus/auth' })).statusCode).toBe(401);
    const answer = await app.inject({ url: '/api/janus/auth', headers: { token } });
    expect(answer.json()).toEqual({
      ok: true,
      result: { apisecret: 'cfg-secret', token_auth: true },
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    const c = await client(`ws://127.0.0.1:${port}/janus/ws?auth_token=${token}`);
    expect(await c.request({ janus: 'create' })).toMatchObject(UNAUTHORIZED);
    expect((await c.request({ janus: 'create', apisecret: 'cfg-secret' }))['janus']).toBe(
      'success',
    );
    expect((await c.request({ janus: 'create', token }))['janus']).toBe('success');
  });
});
