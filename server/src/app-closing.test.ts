/**
 * A request that arrives while the app closes (a restart in place, a stop) on a keep-alive
 * connection that was still busy: the kvmd envelope 503, not Fastify's own body (fuzz finding).
 */
import { connect } from 'node:net';
import { expect, it } from 'vitest';
import { initAndLogin, newApp } from './test-helpers';

it('answers a request that arrives while closing with a 503 envelope and closes the connection', async () => {
  const app = await newApp();
  const token = await initAndLogin(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');

  // A paste slow enough to keep the connection busy (so close cannot reap it as idle), then,
  // once close has begun, a plain check on the same connection.
  const text = 'a'.repeat(20);
  const socket = connect(address.port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.write(
    `POST /api/hid/print?delay=0.02 HTTP/1.1\r\nHost: 127.0.0.1\r\nToken: ${token}\r\n` +
      `Content-Type: text/plain\r\nContent-Length: ${text.length}\r\n\r\n${text}`,
  );
  await expect.poll(() => app.ctx.hid.pasting, { timeout: 10_000 }).toBe(true);
  const closing = app.close();
  await new Promise((r) => setImmediate(r));
  socket.write(`GET /api/auth/check HTTP/1.1\r\nHost: 127.0.0.1\r\nToken: ${token}\r\n\r\n`);

  await expect.poll(() => received.split('HTTP/1.1 ').length - 1, { timeout: 15_000 }).toBe(2);
  await closing;
  const second = received.slice(received.lastIndexOf('HTTP/1.1 '));
  expect(second).toMatch(/^HTTP\/1\.1 503 /);
  expect(second.toLowerCase()).toContain('connection: close');
  const body = JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4)) as {
    ok: boolean;
    result: { error: string };
  };
  expect(body).toMatchObject({ ok: false, result: { error: 'ServiceUnavailableError' } });
  socket.destroy();
});
