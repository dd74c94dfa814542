/**
 * Issue 9 item 21: a client's WebSocket protocol mistake (bad opcode, missing mask, invalid
 * UTF-8, oversize frame) is a debug line, never an error with a stack trace.
 */
import { connect as tcpConnect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { buildApp, createContext } from '../app';
import { buildConfig } from '../config';
import { loadConfigDefaults } from '../paths';
import { initAndLogin, tempDataDir } from '../test-helpers';

interface Line {
  level: number;
  msg?: string;
  err?: unknown;
}

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

async function appWithLog(lines: Line[]): Promise<FastifyInstance> {
  const config = buildConfig(
    { data_dir: await tempDataDir(), target: 'testbed', webrtc: { stun_url: null } },
    loadConfigDefaults(),
  );
  const ctx = await createContext(config, '0.0.0-test');
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString('utf8').split('\n'))
        if (text) lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  return buildApp(ctx, { logger: pino({ level: 'debug' }, stream) });
}

/** Upgrades a raw TCP connection; resolves once the 101 is in. */
function upgrade(port: number, path: string, token: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const sock = tcpConnect(port, '127.0.0.1');
    let head = '';
    sock.on('error', () => undefined);
    sock.on('data', function onData(chunk: Buffer) {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      sock.off('data', onData);
      if (head.startsWith('HTTP/1.1 101')) resolve(sock);
      else reject(new Error(head.split('\r\n')[0]));
    });
    sock.write(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\n` +
        `Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n` +
        `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: janus-protocol\r\n` +
        `Token: ${token}\r\n\r\n`,
    );
  });
}

const MASK = [0x11, 0x22, 0x33, 0x44];
function masked(first: number, payload: number[]): Buffer {
  return Buffer.from([
    first,
    0x80 | payload.length,
    ...MASK,
    ...payload.map((b, i) => b ^ MASK[i % 4]!),
  ]);
}

const BAD_FRAMES: Array<[string, Buffer]> = [
  ['a reserved opcode', masked(0x83, [])],
  ['an unmasked frame', Buffer.from([0x81, 0x01, 0x41])],
  ['invalid UTF-8', masked(0x81, [0xc3, 0x28])],
  ['RSV bits without an extension', masked(0xc1, [0x41])],
  // 64-bit length of 2^40: over every maxPayload
  ['an oversize length', Buffer.from([0x82, 0xff, 0, 0, 0x01, 0, 0, 0, 0, 0, ...MASK])],
  ['a fragmented control frame', masked(0x09, [1])],
];

describe('WebSocket protocol errors are a client mistake', () => {
  it.each(['/api/ws', '/api/media/ws', '/janus/ws'])(
    'logs them at debug on %s, with no error line',
    async (path) => {
      const lines: Line[] = [];
      app = await appWithLog(lines);
      const token = await initAndLogin(app);
      await app.listen({ host: '127.0.0.1', port: 0 });
      const addr = app.server.address();
      if (!addr || typeof addr === 'string') throw new Error('no address');
      for (const [what, frame] of BAD_FRAMES) {
        const sock = await upgrade(addr.port, path, token);
        const closed = new Promise<void>((r) => sock.on('close', () => r()));
        sock.write(frame);
        await closed;
        expect(
          lines.filter((l) => l.level >= 40),
          `after ${what}`,
        ).toEqual([]);
      }
      await expect
        .poll(() => lines.filter((l) => l.level === 20 && /ws: client/.test(l.msg ?? '')).length)
        .toBeGreaterThanOrEqual(BAD_FRAMES.length);
    },
  );
});
