import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EDID_INVALID_MESSAGE, EDID_PRESETS } from '@kvm/protocol';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { AppPerTest, form, login, PASSWORD } from '../test-helpers';

const apps = new AppPerTest();
afterEach(() => apps.stop());

async function start(): Promise<{ app: FastifyInstance; token: string; dir: string }> {
  const { app, token, dataDir } = await apps.start();
  return { app, token, dir: dataDir };
}

const p1080 = EDID_PRESETS.find((p) => p.key === 'E1920x1080')!;
const p1440 = EDID_PRESETS.find((p) => p.key === 'E2560x1440')!;

describe('/api/upgrade/edid_list', () => {
  it('is a bare JSON array of the presets (no envelope)', async () => {
    const { app, token } = await start();
    const res = await app.inject({ url: '/api/upgrade/edid_list', headers: { token } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const list = res.json() as unknown[];
    expect(Array.isArray(list)).toBe(true);
    expect(list).toEqual(EDID_PRESETS);
  });

  it('needs a session', async () => {
    const { app } = await start();
    expect((await app.inject({ url: '/api/upgrade/edid_list' })).statusCode).toBe(401);
    expect((await app.inject({ url: '/api/upgrade/get_edid' })).statusCode).toBe(401);
    const res = await app.inject({
      method: 'POST',
      url: '/api/upgrade/edid',
      ...form({ edid: p1080.content }),
    });
    expect(res.statusCode).toBe(401);
  });
});

describe('/api/upgrade/edid and get_edid', () => {
  it('starts empty, saves what was submitted, then applies it', async () => {
    const { app, token, dir } = await start();
    let res = await app.inject({ url: '/api/upgrade/get_edid', headers: { token } });
    expect(res.json().result).toMatchObject({
      edid: '',
      preset: null,
      applies: 'now',
      pending: false,
    });

    // whitespace and upper case as a user pastes it
    const pasted = p1440.content.toUpperCase().replace(/(.{32})/g, '$1\n');
    res = await app.inject({
      method: 'POST',
      url: '/api/upgrade/edid',
      ...form({ edid: pasted }),
      headers: { ...form({}).headers, token },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      ok: true,
      result: { status: 'success', message: 'EDID data has been written and applied' },
    });
    expect(await readFile(join(dir, 'system', 'edid.txt'), 'utf8')).toBe(pasted);
    res = await app.inject({ url: '/api/upgrade/get_edid', headers: { token } });
    expect(res.json().result).toEqual({
      edid: pasted,
      preset: 'E2560x1440',
      preferred: { width: 2560, height: 1440, hz: 60 },
      applies: 'now',
      pending: false,
    });
  });

  it('takes multipart and the query too', async () => {
    const { app, token } = await start();
    const boundary = 'XyZ';
    const body =
      `--${boundary}\r\nContent-Disposition: form-data; name="edid"\r\n\r\n${p1080.content}\r\n` +
      `--${boundary}--\r\n`;
    let res = await app.inject({
      method: 'POST',
      url: '/api/upgrade/edid',
      payload: body,
      headers: { token, 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    expect(res.statusCode).toBe(200);
    res = await app.inject({
      method: 'POST',
      url: `/api/upgrade/edid?edid=${p1440.content}`,
      headers: { token },
    });
    expect(res.statusCode).toBe(200);
    res = await app.inject({ url: '/api/upgrade/get_edid', headers: { token } });
    expect(res.json().result.preset).toBe('E2560x1440');
  });

  it('a 128-byte EDID is accepted (our CTA block is appended) and saved as submitted', async () => {
    const { app, token } = await start();
    const base = Buffer.from(p1440.content.slice(0, 256), 'hex');
    base[126] = 0;
    base[127] = (base[127]! + 1) % 256;
    const text = base.toString('hex');
    const res = await app.inject({
      method: 'POST',
      url: '/api/upgrade/edid',
      ...form({ edid: text }),
      headers: { ...form({}).headers, token },
    });
    expect(res.statusCode).toBe(200);
    const state = (await app.inject({ url: '/api/upgrade/get_edid', headers: { token } })).json()
      .result;
    expect(state).toMatchObject({ edid: text, preset: null });
    expect(state.preferred).toEqual({ width: 2560, height: 1440, hz: 60 });
  });

  it.each([
    ['missing', null],
    ['empty', ''],
    ['wrong length', p1080.content.slice(0, 300)],
    ['odd length', p1080.content.slice(0, 511)],
    ['non-hex', 'g' + p1080.content.slice(1)],
    ['bad header', '11' + p1080.content.slice(2)],
    ['bad checksum', p1080.content.slice(0, 254) + '00' + p1080.content.slice(256)],
    ['too long', p1080.content + ' '.repeat(3000)],
  ])('400 Invalid EDID format when %s, nothing saved', async (_name, text) => {
    const { app, token, dir } = await start();
    const res = await app.inject({
      method: 'POST',
      url: '/api/upgrade/edid',
      ...form(text === null ? {} : { edid: text }),
      headers: { ...form({}).headers, token },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().result).toEqual({
      error: 'BadRequestError',
      error_msg: EDID_INVALID_MESSAGE,
    });
    await expect(readFile(join(dir, 'system', 'edid.txt'))).rejects.toThrow();
    const state = (await app.inject({ url: '/api/upgrade/get_edid', headers: { token } })).json()
      .result;
    expect(state.edid).toBe('');
  });

  it('bounds the body', async () => {
    const { app, token } = await start();
    const res = await app.inject({
      method: 'POST',
      url: '/api/upgrade/edid',
      ...form({ edid: '0'.repeat(20_000) }),
      headers: { ...form({}).headers, token },
    });
    expect(res.statusCode).toBe(413);
  });

  it('re-applies the saved EDID after a restart', async () => {
    const { app: first, token } = await start();
    await first.inject({
      method: 'POST',
      url: '/api/upgrade/edid',
      ...form({ edid: p1440.content }),
      headers: { ...form({}).headers, token },
    });
    const app = await apps.restart();
    const again = await login(app, PASSWORD);
    const res = await app.inject({ url: '/api/upgrade/get_edid', headers: { token: again } });
    expect(res.json().result).toMatchObject({
      edid: p1440.content,
      preset: 'E2560x1440',
      preferred: { width: 2560, height: 1440, hz: 60 },
    });
  });
});
