/** Issue 13 item 8: `streamer/set_params?quality=` is kvmd's 1..100; a bad one applies nothing. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { AppPerTest } from '../test-helpers';

const apps = new AppPerTest();
let app: FastifyInstance;
let token: string;
beforeAll(async () => ({ app, token } = await apps.start()));
afterAll(() => apps.stop());

/** As aiohttp sends it: params only, an empty octet-stream body. */
const post = (query: string) =>
  app.inject({
    method: 'POST',
    url: `/api/streamer/set_params?${query}`,
    headers: { token, 'content-type': 'application/octet-stream', 'content-length': '0' },
    payload: '',
  });

it('refuses quality outside 1..100 and applies nothing of the call', async () => {
  const before = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result
    .params;
  for (const q of ['999', '0', '-5', 'abc']) {
    const res = await post(`quality=${q}&desired_fps=7`);
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('ValidatorError');
    expect(res.json().result.error_msg).toContain("'quality'");
  }
  const after = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result
    .params;
  expect(after).toEqual(before);
  expect((await post('quality=80')).statusCode).toBe(200);
  expect((await post('quality=1')).statusCode).toBe(200);
  expect((await post('quality=100')).statusCode).toBe(200);
});
