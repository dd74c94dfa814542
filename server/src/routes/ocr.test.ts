/**
 * `GET /api/streamer/ocr` as PiKVM's UI and kvmd's clients ask it (a GET with the session cookie
 * or a token header, no body), and the `ocr` event every new `/api/ws` client gets.
 */
import { rm } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { initAndLogin, newApp, tempDataDir } from '../test-helpers';

let app: FastifyInstance | undefined;
let dataDir: string | undefined;
afterEach(async () => {
  await app?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  app = undefined;
  dataDir = undefined;
});

async function start(): Promise<string> {
  dataDir = await tempDataDir();
  app = await newApp(dataDir);
  return initAndLogin(app);
}

describe('GET /api/streamer/ocr (kvmd)', () => {
  it("answers kvmd's state with the installed languages", async () => {
    const token = await start();
    // PiKVM's UI: a plain GET with its cookie
    const res = await app!.inject({
      method: 'GET',
      url: '/api/streamer/ocr',
      headers: { cookie: `auth_token=${token}`, accept: '*/*' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json();
    expect(body).toEqual({
      ok: true,
      result: {
        ocr: { enabled: true, langs: { default: ['eng'], available: expect.any(Array) } },
      },
    });
    expect(body.result.ocr.langs.available).toContain('eng');
  });

  it('needs a session', async () => {
    await start();
    const res = await app!.inject({ method: 'GET', url: '/api/streamer/ocr' });
    expect(res.statusCode).toBe(401);
  });

  it('is the ocr event of a new /api/ws client', async () => {
    await start();
    const events = await app!.ctx.registry.snapshot(() => undefined);
    expect(events).toContainEqual({
      event_type: 'ocr',
      event: {
        enabled: true,
        langs: { default: ['eng'], available: expect.arrayContaining(['eng']) },
      },
    });
  });
});
