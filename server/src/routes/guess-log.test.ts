/** Every place a secret is guessed logs its refusal with the client's address and its `via`. */
import type { FastifyInstance } from 'fastify';
import { afterEach, expect, it } from 'vitest';
import { FAST_HASHER, LogSink, newAuthApp } from '../services/auth/auth-test-kit';
import { form, initAndLogin } from '../test-helpers';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

it('login, X-KVMD headers and the password change each log a refusal under their name', async () => {
  const log = new LogSink();
  app = await newAuthApp({ passwords: FAST_HASHER, log });
  const token = await initAndLogin(app);
  const remoteAddress = '192.0.2.7';
  await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    remoteAddress,
    ...form({ user: 'admin', passwd: 'wrong' }),
  });
  await app.inject({
    url: '/api/auth/check',
    remoteAddress,
    headers: { 'x-kvmd-user': 'admin', 'x-kvmd-passwd': 'wrong' },
  });
  await app.inject({
    method: 'POST',
    url: '/api/init/change_password?old_password=wrong&new_password=another%20horse',
    remoteAddress,
    headers: { token },
  });
  expect(log.find('login failed').map((l) => [l['via'], l['ip']])).toEqual([
    ['login', remoteAddress],
    ['x-kvmd-headers', remoteAddress],
    ['change_password', remoteAddress],
  ]);
});
