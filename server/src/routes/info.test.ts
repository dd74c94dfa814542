/**
 * Issue 13 items 7 and 9: `/api/info` as GL 1.9 and kvmd 4.197-4.206 answer it, asked the way
 * their clients ask (GL's console: no arguments; PiKVM's index page:
 * `?legacy=0&fields=auth,node,meta,extras`; its IPMI/VNC pages: `?legacy=0`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { hostname } from 'node:os';
import { AppPerTest } from '../test-helpers';

const apps = new AppPerTest();
let app: FastifyInstance;
let token: string;
beforeAll(async () => ({ app, token } = await apps.start()));
afterAll(() => apps.stop());

async function info(query: string) {
  const res = await app.inject({
    url: `/api/info${query}`,
    headers: { token, accept: 'application/json' },
  });
  return { status: res.statusCode, body: res.json() };
}

describe('/api/info', () => {
  it("a bare request: GL's four fields and kvmd's default hw {health, platform} beside them", async () => {
    const { status, body } = await info('');
    expect(status).toBe(200);
    const r = body.result;
    expect(Object.keys(r).sort()).toEqual([
      'auth',
      'extras',
      'fan',
      'hw',
      'meta',
      'node',
      'system',
      'uptime',
    ]);
    // GL's clients read the platform in system, PiKVM's Home Assistant integration in hw
    const platform = r.system.platform;
    expect(platform).toHaveProperty('video', 'testbed');
    expect(platform).toHaveProperty('board', null);
    // ours: the gadget target's problems and UDC; off it, none
    expect(platform).toHaveProperty('problems', []);
    expect(platform).toHaveProperty('udc', null);
    for (const k of ['type', 'base', 'model', 'serial']) expect(platform).toHaveProperty(k);
    expect(Object.keys(r.hw).sort()).toEqual(['health', 'platform']);
    expect(r.hw.platform).toEqual(platform);
    expect(Object.keys(r.hw.health).sort()).toEqual(['cpu', 'mem', 'temp', 'throttling']);
    expect(r.hw.health.mem.total).toBeGreaterThan(0);
    expect(r).not.toHaveProperty('health');
    expect(r.fan).toEqual({ monitored: false, state: null });
  });

  it('fields= names exactly what comes back', async () => {
    const { body } = await info('?fields=system,meta');
    expect(Object.keys(body.result).sort()).toEqual(['meta', 'system']);
    expect(body.result.system).toHaveProperty('platform');
  });

  it("PiKVM's index page: node among the fields", async () => {
    const { status, body } = await info('?legacy=0&fields=auth,node,meta,extras');
    expect(status).toBe(200);
    expect(Object.keys(body.result).sort()).toEqual(['auth', 'extras', 'meta', 'node']);
    expect(body.result.node).toEqual({ host: hostname() });
  });

  it('legacy=0: every field in the shapes aiopikvm models require', async () => {
    const { body } = await info('?legacy=0');
    const r = body.result;
    expect(Object.keys(r).sort()).toEqual([
      'auth',
      'extras',
      'fan',
      'health',
      'meta',
      'node',
      'system',
      'uptime',
    ]);
    expect(r.uptime.total).toBeGreaterThan(0);
    expect(Object.keys(r.uptime.parts).sort()).toEqual(['days', 'hours', 'minutes', 'seconds']);
    expect(r.health.throttling).toBeNull();
    expect(r.health.mem.total).toBeGreaterThan(0);
    expect(r.health.mem.available).toBeGreaterThan(0);
    expect(typeof r.health.mem.percent).toBe('number');
    expect(r.health.temp).toHaveProperty('cpu');
    expect(r.health.cpu).toHaveProperty('percent');
    expect(r.fan).toEqual({ monitored: false, state: null });
    expect(r.system.platform.video).toBe('testbed');
    expect(Object.keys(r.system.kernel).sort()).toEqual([
      'machine',
      'release',
      'system',
      'version',
    ]);
    expect(r.system.streamer).toMatchObject({
      app: expect.any(String),
      version: expect.any(String),
    });
  });

  it("legacy=1: kvmd's default set with hw, platform moved out of system", async () => {
    const all = (await info('?legacy=1')).body.result;
    expect(Object.keys(all).sort()).toEqual([
      'auth',
      'extras',
      'fan',
      'hw',
      'meta',
      'node',
      'system',
      'uptime',
    ]);
    expect(all.hw.platform.video).toBe('testbed');
    expect(all.hw.health.throttling).toBeNull();
    expect(all.system).not.toHaveProperty('platform');
    const some = (await info('?fields=hw')).body.result;
    expect(Object.keys(some)).toEqual(['hw']);
  });

  it('refuses unknown fields, hw without legacy and a bad legacy', async () => {
    for (const q of ['?fields=system,nope', '?legacy=0&fields=hw', '?legacy=maybe']) {
      const { status, body } = await info(q);
      expect(status).toBe(400);
      expect(body.result.error).toBe('ValidatorError');
    }
  });
});
