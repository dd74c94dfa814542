/** `GET /api/audio` and the `audio` event of `/api/ws` (issue 14) on the testbed. */
import { afterEach, describe, expect, it } from 'vitest';
import type { StateEvent } from '../ws/state-registry';
import { AppPerTest, login, PASSWORD } from '../test-helpers';

const apps = new AppPerTest();
afterEach(() => apps.stop());

async function start(): Promise<string> {
  return (await apps.start()).token;
}

const TESTBED = {
  available: true,
  reason: null,
  simulated: true,
  listeners: 0,
  mic: { enabled: false, available: true, active: false },
  // The English text for kvmd-style clients, the code for the console to translate.
  camera: { available: false, reason: 'The testbed has no camera input', code: 'testbed' },
};

describe('GET /api/audio', () => {
  it("answers the testbed's simulated sound in kvmd's envelope", async () => {
    const token = await start();
    const res = await apps.app!.inject({ url: '/api/audio', headers: { token } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, result: TESTBED });
  });

  it('needs a session', async () => {
    await start();
    const res = await apps.app!.inject({ url: '/api/audio' });
    expect(res.statusCode).toBe(401);
  });

  it('is the audio event of a new /api/ws client, sent again as listeners come and go', async () => {
    await start();
    const events = await apps.app!.ctx.registry.snapshot(() => undefined);
    expect(events).toContainEqual({ event_type: 'audio', event: TESTBED });
    const seen: StateEvent[] = [];
    apps.app!.ctx.registry.onChange((e) => {
      if (e.event_type === 'audio') seen.push(e);
    });
    const stop = apps.app!.ctx.audio.listen(() => undefined);
    stop();
    expect(seen.map((e) => (e.event as { listeners: number }).listeners)).toEqual([1, 0]);
  });

  it('takes enable_mic at the next start, as GL does', async () => {
    const token = await start();
    const set = await apps.app!.inject({
      method: 'POST',
      url: '/api/system/set_param?enable_mic=1',
      headers: { token },
    });
    expect(set.statusCode).toBe(200);
    let state = (await apps.app!.inject({ url: '/api/audio', headers: { token } })).json().result;
    expect(state.mic.enabled).toBe(false);
    expect(apps.app!.ctx.audio.features()).toEqual({ audio: true, mic: false });
    const app = await apps.restart();
    const again = await login(app, PASSWORD);
    state = (await app.inject({ url: '/api/audio', headers: { token: again } })).json().result;
    expect(state.mic).toEqual({ enabled: true, available: true, active: false });
    expect(app.ctx.audio.features()).toEqual({ audio: true, mic: true });
  });
});
