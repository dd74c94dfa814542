/**
 * Issue 21, item 4: who may frame the console. `server.frame_ancestors` (default: the device's
 * own origin) is sent on every answer as CSP `frame-ancestors`, with X-Frame-Options where it
 * has an equivalent; bad lists stop the start with the key path.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildConfig, ConfigError } from '../config';
import { loadConfigDefaults } from '../paths';
import { initAndLogin, newApp } from '../test-helpers';
import { testTempDir } from '../test-temp';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function webDir(): Promise<string> {
  const dir = await testTempDir('web');
  await writeFile(join(dir, 'index.html'), '<!doctype html><div id="root"></div>');
  return dir;
}

const html = { accept: 'text/html' };

describe('frame-ancestors', () => {
  it("by default only the device's own origin may frame the console", async () => {
    app = await newApp(undefined, { server: { web_dir: await webDir() } });
    const token = await initAndLogin(app);
    for (const res of [
      await app.inject({ url: '/', headers: html }),
      await app.inject({ url: '/kvm', headers: html }),
      // the no-permission page and the envelope of an error
      await app.inject({ url: '/nothing', headers: html }),
      await app.inject({ url: '/api/info', headers: { token } }),
      await app.inject({ url: '/api/info' }),
    ]) {
      expect(res.headers['content-security-policy']).toBe("frame-ancestors 'self'");
      expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    }
  });

  it('lets the configured host applications frame it', async () => {
    app = await newApp(undefined, {
      server: {
        web_dir: await webDir(),
        frame_ancestors: ["'self'", 'https://app.example', 'https://*.corp.example:8443'],
      },
    });
    const res = await app.inject({ url: '/', headers: html });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toBe(
      "frame-ancestors 'self' https://app.example https://*.corp.example:8443",
    );
    // X-Frame-Options has no list: a browser without CSP would refuse the host application
    expect(res.headers['x-frame-options']).toBeUndefined();
    await app.close();

    app = await newApp(undefined, {
      server: { web_dir: await webDir(), frame_ancestors: ["'none'"] },
    });
    const none = await app.inject({ url: '/', headers: html });
    expect(none.headers['content-security-policy']).toBe("frame-ancestors 'none'");
    expect(none.headers['x-frame-options']).toBe('DENY');
  });

  it('refuses lists that are not origins, or that let any page in, naming the key', () => {
    const build = (frame_ancestors: unknown) =>
      buildConfig({ server: { frame_ancestors } }, loadConfigDefaults());
    expect(
      build(["'self'", 'http://[::1]:8080', 'https://kvm.example']).server.frame_ancestors,
    ).toEqual(["'self'", 'http://[::1]:8080', 'https://kvm.example']);
    expect(buildConfig({}, loadConfigDefaults()).server.frame_ancestors).toEqual(["'self'"]);
    for (const [bad, why] of [
      [['*'], 'lets any page frame the console'],
      [['https:'], 'lets any page frame the console'],
      [['self'], 'write it quoted, as CSP does: "\'self\'"'],
      [["'none'", "'self'"], "'none' cannot be combined"],
      [['https://app.example/path'], 'expected'],
      [["https://a.example 'unsafe-inline'"], 'expected'],
      [['https://a.example;script-src *'], 'expected'],
      [['https://a.example:99999'], 'out of range'],
      [[], 'server.frame_ancestors'],
    ] as Array<[unknown, string]>) {
      let err: unknown;
      try {
        build(bad);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(bad)).toBeInstanceOf(ConfigError);
      expect((err as Error).message, JSON.stringify(bad)).toContain('server.frame_ancestors');
      expect((err as Error).message, JSON.stringify(bad)).toContain(why);
    }
  });
});
