/**
 * `GET /api/streamer/ocr` as PiKVM's UI and kvmd's clients ask it (a GET with the session cookie
 * or a token header, no body), the OCR of `GET /api/streamer/snapshot?ocr=1` end to end, and the
 * `ocr` event every new `/api/ws` client gets.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AppPerTest } from '../test-helpers';

const apps = new AppPerTest();
afterEach(() => apps.stop());

async function start(): Promise<string> {
  return (await apps.start()).token;
}

describe('GET /api/streamer/ocr (kvmd)', () => {
  it("answers kvmd's state with the installed languages", async () => {
    const token = await start();
    // PiKVM's UI: a plain GET with its cookie
    const res = await apps.app!.inject({
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
    const res = await apps.app!.inject({ method: 'GET', url: '/api/streamer/ocr' });
    expect(res.statusCode).toBe(401);
  });

  it('reads the screen through the snapshot route as PiKVM UI asks it', async () => {
    const token = await start();
    // ocr.js: ocr=1, the chosen language and the selection box; the testbed's label is at
    // (32, 656), 11 characters of 24 pixels, 28 high (drivers/testbed/screen.ts)
    const q = 'ocr=1&ocr_langs=eng&ocr_left=16&ocr_top=640&ocr_right=400&ocr_bottom=700';
    let res = await apps.app!.inject({
      method: 'GET',
      url: `/api/streamer/snapshot?${q}`,
      headers: { cookie: `auth_token=${token}` },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body.trim()).toBe('TEST TARGET');
    res = await apps.app!.inject({
      method: 'GET',
      url: '/api/streamer/snapshot?ocr=1&ocr_langs=eng,xyz',
      headers: { cookie: `auth_token=${token}` },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().result).toEqual({
      error: 'ValidatorError',
      error_msg: "Failed sub-validator on one of the item of ['eng', 'xyz']",
    });
  });

  it('is the ocr event of a new /api/ws client', async () => {
    await start();
    const events = await apps.app!.ctx.registry.snapshot(() => undefined);
    expect(events).toContainEqual({
      event_type: 'ocr',
      event: {
        enabled: true,
        langs: { default: ['eng'], available: expect.arrayContaining(['eng']) },
      },
    });
  });
});
