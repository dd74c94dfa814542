/** `GET /api/audio` and the `audio` event of `/api/ws` (issue 14) on the testbed. */
import { rm } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { StateEvent } from '../ws/state-registry';
import { initAndLogin, login, newApp, PASSWORD, tempDataDir } from '../test-helpers';

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

const TESTBED = {
  available: true,
  simulated: true,
  listeners: 0,
  mic: { enabled: false, available: true, active: false },
  // The English text for kvmd-style clients, the code for the console to translate.
  camera: { available: false, reason: 'The testbed has no camera input', code: 'testbed' },
};

describe('GET /api/audio', () => {
  it("answers the testbed's simulated sound in kvmd's envelope", async () => {
    const token = await start();
    const res = await app!.inject({ url: '/api/audio', headers: { token } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, result: TESTBED });
  });

  it('needs a session', async () => {
    await start();
    const res = await app!.inject({ url: '/api/audio' });
    expect(res.statusCode).toBe(401);
  });

  it('is the audio event of a new /api/ws client, sent again as listeners come and go', async () => {
    await start();
    const events = await app!.ctx.registry.snapshot(() => undefined);
    expect(events).toContainEqual({ event_type: 'audio', event: TESTBED });
    const seen: StateEvent[] = [];
    app!.ctx.registry.onChange((e) => {
      if (e.event_type === 'audio') seen.push(e);
    });
    const stop = app!.ctx.audio.listen(() => undefined);
    stop();
    expect(seen.map((e) => (e.event as { listeners: number }).listeners)).toEqual([1, 0]);
  });

  it('takes enable_mic at the next start, as GL does', async () => {
    const token = await start();
    const set = await app!.inject({
      method: 'POST',
      url: '/api/system/set_param?enable_mic=1',
      headers: { token },
    });
    expect(set.statusCode).toBe(200);
    let state = (await app!.inject({ url: '/api/audio', headers: { token } })).json().result;
    expect(state.mic.enabled).toBe(false);
    expect(app!.ctx.audio.features()).toEqual({ audio: true, mic: false });
    await app!.close();
    app = await newApp(dataDir);
    const again = await login(app, PASSWORD);
    state = (await app.inject({ url: '/api/audio', headers: { token: again } })).json().result;
    expect(state.mic).toEqual({ enabled: true, available: true, active: false });
    expect(app.ctx.audio.features()).toEqual({ audio: true, mic: true });
  });
});
