import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { AtxService } from '../services/atx/atx-service';
import { FakeAtx } from '../services/atx/test-support';
import { initAndLogin, newApp } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

describe('ATX service', () => {
  it('runs one press at a time, busy meanwhile, and follows kvmd power actions', async () => {
    const driver = new FakeAtx();
    const atx = new AtxService(driver);
    const states: boolean[] = [];
    atx.on('state', (s) => states.push(s.busy));
    const first = atx.click('power', true);
    expect(atx.getState().busy).toBe(true);
    await expect(atx.click('reset', false)).rejects.toMatchObject({
      status: 409,
      wireName: 'AtxIsBusyError',
    });
    driver.finish();
    await first;
    expect(states).toEqual([true, false]);
    await atx.power('off', false); // already off: nothing pressed
    expect(driver.pressed).toEqual(['power']);
    await atx.power('on', false);
    driver.finish();
    await new Promise((r) => setTimeout(r, 0));
    driver.power = true;
    const hard = atx.power('off_hard', true);
    expect(driver.pressed).toEqual(['power', 'power', 'power_long']);
    driver.finish();
    await hard;
  });
});

describe('kvmd 4.197 atx.acts', () => {
  it('shows which button is being pressed, in the state and the event', async () => {
    const driver = new FakeAtx();
    const atx = new AtxService(driver);
    const events: Array<{ busy: boolean; acts: { power: boolean; reset: boolean } }> = [];
    atx.on('state', (s) => events.push({ busy: s.busy, acts: s.acts }));
    expect(atx.getState().acts).toEqual({ power: false, reset: false });
    const long = atx.click('power_long', true);
    expect(atx.getState().acts).toEqual({ power: true, reset: false });
    // a refused press changes nothing
    await expect(atx.click('reset', false)).rejects.toMatchObject({ status: 409 });
    expect(atx.getState().acts).toEqual({ power: true, reset: false });
    driver.finish();
    await long;
    const reset = atx.click('reset', true);
    expect(atx.getState().acts).toEqual({ power: false, reset: true });
    driver.finish();
    await reset;
    expect(events).toEqual([
      { busy: true, acts: { power: true, reset: false } },
      { busy: false, acts: { power: false, reset: false } },
      { busy: true, acts: { power: false, reset: true } },
      { busy: false, acts: { power: false, reset: false } },
    ]);
    atx.dispose();
  });
});

describe('/api/atx on a target without ATX', () => {
  it('answers the state and refuses a click with AtxDisabledError', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const state = (await app.inject({ url: '/api/atx', headers: { token } })).json().result;
    expect(state).toEqual({
      enabled: false,
      busy: false,
      acts: { power: false, reset: false },
      leds: { power: false, hdd: false },
      power: 'off',
    });
    const res = await app.inject({
      method: 'POST',
      url: '/api/atx/click?button=power',
      headers: { token },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('AtxDisabledError');
    const bad = await app.inject({
      method: 'POST',
      url: '/api/atx/click?button=hold',
      headers: { token },
    });
    expect(bad.json().result.error).toBe('ValidatorError');
  });
});
