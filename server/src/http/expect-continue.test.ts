/**
 * `Expect: 100-continue`: only a client whose credentials hold (or a public login) is told to
 * send its body; an anonymous one gets its 401 without ever being asked for the body.
 */
import { afterEach, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, newApp } from '../test-helpers';
import { RawSockets } from './test-support';

let app: FastifyInstance | null = null;
const sockets = new RawSockets();
afterEach(async () => {
  // the requests still wait for their bodies: cut them, or close would wait for them
  sockets.destroyAll();
  await app?.close();
  app = null;
});

async function start(): Promise<{ port: number; token: string }> {
  app = await newApp();
  const token = await initAndLogin(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return { port: address.port, token };
}

it('does not invite an anonymous or wrongly authenticated body', async () => {
  const { port } = await start();
  for (const extra of [
    '',
    `Token: ${'0'.repeat(64)}\r\n`,
    `Cookie: auth_token=${'f'.repeat(64)}\r\n`,
  ]) {
    const received = await sockets.headOnly(port, '/api/msd/write?image=x.iso', extra);
    await expect.poll(received, { timeout: 10_000 }).toMatch(/HTTP\/1\.1 40[13] /);
    expect(received()).not.toContain('100 Continue');
  }
});

it('invites the body of a live session, by header, query or cookie, and of a login', async () => {
  const { port, token } = await start();
  const asked = [
    await sockets.headOnly(port, '/api/msd/write?image=a.iso', `Token: ${token}\r\n`),
    await sockets.headOnly(port, `/api/msd/write?image=b.iso&auth_token=${token}`),
    await sockets.headOnly(port, '/api/msd/write?image=c.iso', `Cookie: auth_token=${token}\r\n`),
    await sockets.headOnly(port, '/api/auth/login'),
  ];
  for (const received of asked) {
    await expect.poll(received, { timeout: 10_000 }).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
  }
});
