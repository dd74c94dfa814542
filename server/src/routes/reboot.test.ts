import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp, createContext } from '../app';
import { buildConfig } from '../config';
import { loadConfigDefaults } from '../paths';

let app: FastifyInstance | null = null;
let dir = '';
afterEach(async () => {
  await app?.close();
  app = null;
  await rm(dir, { recursive: true, force: true });
});

describe('GET /api/upgrade/reboot', () => {
  it("answers GL's status, then restarts the device; a session is required", async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvm-reboot-'));
    const config = buildConfig(
      { data_dir: dir, target: 'testbed', webrtc: { stun_url: null } },
      loadConfigDefaults(),
    );
    let restarts = 0;
    const ctx = await createContext(config, '0.0.0-test', undefined, {
      requestRestart: () => restarts++,
    });
    app = await buildApp(ctx);
    const anonymous = await app.inject({ method: 'GET', url: '/api/upgrade/reboot' });
    expect(anonymous.statusCode).toBe(401);
    expect(restarts).toBe(0);
    const token = await ctx.auth.sessions.create('admin', 3_600_000);
    const res = await app.inject({ method: 'GET', url: '/api/upgrade/reboot', headers: { token } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, result: { status: 'Reboot started' } });
    expect(restarts).toBe(1);
  });
});
