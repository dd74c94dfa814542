/**
 * `Expect: 100-continue`: only a client whose credentials hold (or a public login) is told to
 * send its body; an anonymous one gets its 401 without ever being asked for the body.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, newApp } from '../test-helpers';

let app: FastifyInstance | null = null;
const sockets: Socket[] = [];
afterEach(async () => {
  // the requests still wait for their bodies: cut them, or close would wait for them
  for (const s of sockets.splice(0)) s.destroy();
  await app?.close();
  app = null;
});

/** Sends only the head of a request that expects 100, and reads what comes back. */
async function headOnly(port: number, path: string, extra = ''): Promise<() => string> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\n` +
      `Content-Type: application/octet-stream\r\nContent-Length: 1048576\r\n${extra}\r\n`,
  );
  return () => received;
}

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
    const received = await headOnly(port, '/api/msd/write?image=x.iso', extra);
    await expect.poll(received, { timeout: 10_000 }).toMatch(/HTTP\/1\.1 40[13] /);
    expect(received()).not.toContain('100 Continue');
  }
});

it('invites the body of a live session, by header, query or cookie, and of a login', async () => {
  const { port, token } = await start();
  const asked = [
    await headOnly(port, '/api/msd/write?image=a.iso', `Token: ${token}\r\n`),
    await headOnly(port, `/api/msd/write?image=b.iso&auth_token=${token}`),
    await headOnly(port, '/api/msd/write?image=c.iso', `Cookie: auth_token=${token}\r\n`),
    await headOnly(port, '/api/auth/login'),
  ];
  for (const received of asked) {
    await expect.poll(received, { timeout: 10_000 }).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
  }
});
