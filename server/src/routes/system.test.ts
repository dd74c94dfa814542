import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { USER_CONFIG_DEFAULTS } from '@kvm/protocol';
import { initAndLogin, newApp, tempDataDir } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

describe('get_config / set_config', () => {
  it('answers the SPEC 3 defaults on a new device', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const res = await app.inject({ url: '/api/system/get_config', headers: { token } });
    expect(res.json()).toEqual({
      ok: true,
      result: { success: true, config: USER_CONFIG_DEFAULTS },
    });
  });

  it('stores the whole object atomically, keeps unknown keys, fills missing defaults', async () => {
    const dir = await tempDataDir();
    app = await newApp(dir);
    const token = await initAndLogin(app);
    const config = { theme_mode: 1, language: 'zh', keymap: 'de', vendor_key: { nested: [1, 2] } };
    const res = await app.inject({
      method: 'POST',
      url: '/api/system/set_config',
      headers: { token },
      payload: config,
    });
    expect(res.statusCode).toBe(200);
    const stored = res.json().result.config;
    expect(stored).toMatchObject(config);
    expect(stored.video_mode).toBe('webrtc');
    const onDisk = JSON.parse(await readFile(join(dir, 'user-config.json'), 'utf8'));
    expect(onDisk).toEqual(stored);
    const again = await app.inject({ url: '/api/system/get_config', headers: { token } });
    expect(again.json().result.config).toEqual(stored);
  });

  it('refuses bad values with the key path and changes nothing', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const cases: Array<[unknown, string]> = [
      [{ orientation: 45 }, 'orientation'],
      [{ language: 'fr' }, 'language'],
      [{ shortcuts: [{ keys: ['ControlLeft'] }] }, 'shortcuts.0.keys'],
      [{ shortcuts: [{ keys: ['ControlLeft', ''] }] }, 'shortcuts.0.keys.1'],
      [{ shortcuts: [{ keys: ['KeyA', 'KeyA'] }] }, 'shortcuts.0.keys'],
      [
        { shortcuts: Array.from({ length: 31 }, (_, i) => ({ keys: ['ControlLeft', `F${i}`] })) },
        'shortcuts',
      ],
      [{ mouse_polling: 'fast' }, 'mouse_polling'],
    ];
    for (const [body, path] of cases) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/system/set_config',
        headers: { token },
        payload: body as object,
      });
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().result.error).toBe('ValidatorError');
      expect(res.json().result.error_msg).toContain(`'${path}'`);
    }
    for (const payload of ['[1,2]', '"text"', '42', 'null']) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/system/set_config',
        headers: { token, 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode, payload).toBe(400);
    }
    const broken = await app.inject({
      method: 'POST',
      url: '/api/system/set_config',
      headers: { token, 'content-type': 'application/json' },
      payload: '{"theme_mode":',
    });
    expect(broken.statusCode).toBe(400);
    expect(broken.json().result.error).toBe('ValidatorError');
    const text = await app.inject({
      method: 'POST',
      url: '/api/system/set_config',
      headers: { token, 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(text.statusCode).toBe(400);
    expect(text.json().result.error_msg).toContain('JSON object');
    const current = await app.inject({ url: '/api/system/get_config', headers: { token } });
    expect(current.json().result.config).toEqual(USER_CONFIG_DEFAULTS);
  });

  it('refuses an oversize body with 413', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const res = await app.inject({
      method: 'POST',
      url: '/api/system/set_config',
      headers: { token },
      payload: { big: 'x'.repeat(300 * 1024) },
    });
    expect(res.statusCode).toBe(413);
    expect(res.json().result.error).toBe('PayloadTooLargeError');
  });
});

describe('set_config bounds and unusable stored files (issue 9, item 13)', () => {
  it('refuses a deeply nested body and one over the size bound, and writes nothing', async () => {
    const dir = await tempDataDir();
    app = await newApp(dir);
    const token = await initAndLogin(app);
    // 6 KB of nesting: once indented on disk this was 18 MB
    const nested = `{"a":${'['.repeat(3000)}${']'.repeat(3000)}}`;
    const deep = await app.inject({
      method: 'POST',
      url: '/api/system/set_config',
      headers: { token, 'content-type': 'application/json' },
      payload: nested,
    });
    expect(deep.statusCode).toBe(400);
    expect(deep.json().result).toMatchObject({ error: 'ValidatorError' });
    expect(deep.json().result.error_msg).toContain('deeper than 8');
    const big = await app.inject({
      method: 'POST',
      url: '/api/system/set_config',
      headers: { token },
      payload: { notes: 'x'.repeat(100 * 1024) },
    });
    expect(big.statusCode).toBe(400);
    expect(big.json().result.error_msg).toContain('65536');
    const eight = { a: { b: { c: { d: { e: { f: { g: 1 } } } } } } };
    const ok = await app.inject({
      method: 'POST',
      url: '/api/system/set_config',
      headers: { token },
      payload: eight,
    });
    expect(ok.statusCode).toBe(200);
    const onDisk = JSON.parse(await readFile(join(dir, 'user-config.json'), 'utf8'));
    expect(onDisk.a).toEqual(eight.a);
    expect(onDisk.notes).toBeUndefined();
  });

  it.each([
    ['garbage', 'not json at all {'],
    ['18 MB of nesting', `{"a":${'[\n'.repeat(3000)}${']'.repeat(3000)}}`.padEnd(18_000_000, ' ')],
  ])('get_config answers 200 over a stored file of %s', async (_name, content) => {
    const dir = await tempDataDir();
    await writeFile(join(dir, 'user-config.json'), content);
    app = await newApp(dir);
    const token = await initAndLogin(app);
    const res = await app.inject({ url: '/api/system/get_config', headers: { token } });
    expect(res.statusCode).toBe(200);
    expect(res.json().result.config).toEqual(USER_CONFIG_DEFAULTS);
  });
});

describe('info', () => {
  it("answers GL's four fields (and kvmd's default ones), or the ones asked for", async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const all = (await app.inject({ url: '/api/info', headers: { token } })).json().result;
    expect(Object.keys(all).sort()).toEqual(
      ['auth', 'extras', 'fan', 'hw', 'meta', 'node', 'system', 'uptime'].sort(),
    );
    expect(all.system.kvmd.version).toBe('4.82');
    expect(all.system.product.version).toBe('0.0.0-test');
    expect(all.auth).toEqual({ enabled: true });
    const some = (
      await app.inject({ url: '/api/info?fields=auth,meta', headers: { token } })
    ).json().result;
    expect(Object.keys(some).sort()).toEqual(['auth', 'meta']);
    const bad = await app.inject({ url: '/api/info?fields=auth,nope', headers: { token } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().result.error_msg).toContain("'fields'");
  });
});

describe('unknown routes and malformed input', () => {
  it('answers 401 first, then 404 or 405 in the envelope', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    expect((await app.inject('/api/nothing/here')).statusCode).toBe(401);
    const missing = await app.inject({ url: '/api/nothing/here', headers: { token } });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().result.error).toBe('NotFoundError');
    const method = await app.inject({ method: 'GET', url: '/api/auth/logout', headers: { token } });
    expect(method.statusCode).toBe(405);
    expect(method.json().result.error).toBe('MethodNotAllowedError');
    const post = await app.inject({ method: 'POST', url: '/api/info', headers: { token } });
    expect(post.statusCode).toBe(405);
  });

  it('refuses repeated and malformed query arguments with ValidatorError', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const res = await app.inject({ url: '/api/2fa/verify?code=1&code=2', headers: { token } });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error_msg).toContain("'code'");
    const ws = await app.inject({ url: '/api/ws?stream=maybe', headers: { token } });
    expect(ws.statusCode).toBe(400);
    expect(ws.json().result.error_msg).toContain("'stream'");
  });
});
