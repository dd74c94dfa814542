/**
 * `/api/wireguard/*` without a tunnel (issue 27; docs/api.md "WireGuard"): sessions, every kind
 * of bad input (400, nothing saved), 413, the public view without secrets, logout. The tunnel
 * itself is proved on real namespaces in drivers/apps/wireguard.netns.test.ts.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { WG_CONFIG_MAX_BYTES } from '@kvm/protocol/wireguard';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../process/run';
import { findExecutable } from '../process/supervisor';
import { AppPerTest } from '../test-helpers';

const apps = new AppPerTest();
afterEach(() => apps.stop());

const hasWg = findExecutable('wg') !== null;
let priv = '';
let peerPub = '';

beforeAll(async () => {
  if (!hasWg) return;
  priv = (await runCommand('wg', ['genkey'])).stdout.trim();
  const other = (await runCommand('wg', ['genkey'])).stdout.trim();
  peerPub = (await runCommand('wg', ['pubkey'], { input: `${other}\n` })).stdout.trim();
});

const good = () =>
  `[Interface]\nPrivateKey = ${priv}\nAddress = 10.77.0.2/24\n\n[Peer]\nPublicKey = ${peerPub}\nPresharedKey = ${priv}\nEndpoint = 198.51.100.2:51820\nAllowedIPs = 10.77.0.0/24\nPersistentKeepalive = 25\n`;

async function start() {
  // No network managed here: the routes never touch this computer's interfaces.
  const { app, token, dataDir } = await apps.start({ system: { network: 'disabled' } });
  const send = (
    method: 'GET' | 'POST',
    path: string,
    payload?: string | Buffer,
    type = 'text/plain',
  ) =>
    app.inject({
      method,
      url: `/api/wireguard/${path}`,
      headers: { token, ...(payload !== undefined ? { 'content-type': type } : {}) },
      ...(payload !== undefined ? { payload } : {}),
    });
  const confFile = join(dataDir, 'apps', 'wireguard', 'wg.conf');
  return { app, token, send, confFile };
}

function multipart(field: string, content: string): { body: Buffer; type: string } {
  const b = 'wgboundary';
  const body = Buffer.from(
    `--${b}\r\nContent-Disposition: form-data; name="${field}"; filename="wg0.conf"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n${content}\r\n--${b}--\r\n`,
  );
  return { body, type: `multipart/form-data; boundary=${b}` };
}

describe('/api/wireguard', () => {
  it('needs a session on every route', async () => {
    const { app } = await apps.build({ system: { network: 'disabled' } });
    for (const [method, path] of [
      ['GET', 'status'],
      ['GET', 'config'],
      ['POST', 'config'],
      ['POST', 'start'],
      ['POST', 'stop'],
      ['POST', 'logout'],
    ] as const) {
      const res = await app.inject({ method, url: `/api/wireguard/${path}` });
      expect(res.statusCode, path).toBe(401);
    }
  });

  it.skipIf(!hasWg)(
    'refuses every kind of bad configuration with 400 and saves nothing',
    async () => {
      const { send, confFile } = await start();
      const bad: [string, string | Buffer, string][] = [
        ['no body', '', 'text/plain'],
        ['JSON without config', '{"x":1}', 'application/json'],
        ['JSON config not text', '{"config":42}', 'application/json'],
        ['JSON array', '[1]', 'application/json'],
        ['not UTF-8', Buffer.from([0x5b, 0xff, 0xfe, 0x5d]), 'text/plain'],
        ['garbage', 'hello world', 'text/plain'],
        ['bad key', good().replace(/PublicKey = .*/, 'PublicKey = abc'), 'text/plain'],
        ['bad endpoint', good().replace(/Endpoint = .*/, 'Endpoint = ;reboot:1'), 'text/plain'],
        [
          'bad allowed ip',
          good().replace(/AllowedIPs = .*/, 'AllowedIPs = 10.0.0.0/99'),
          'text/plain',
        ],
        ['octet-stream', good(), 'application/octet-stream'],
      ];
      for (const [what, body, type] of bad) {
        const res = await send('POST', 'config', body, type);
        expect(res.statusCode, `${what}: ${res.body}`).toBe(400);
        expect(res.json().ok).toBe(false);
        expect(res.body).not.toContain(priv);
      }
      const noFile = multipart('other', good());
      const res = await send('POST', 'config', noFile.body, noFile.type);
      expect(res.statusCode).toBe(400);
      // the line is given
      const keyed = await send(
        'POST',
        'config',
        good().replace(/PublicKey = .*/, 'PublicKey = abc'),
      );
      expect(keyed.json().result.line).toBe(6);
      await expect(stat(confFile)).rejects.toThrow();
      expect((await send('GET', 'config')).json().result).toEqual({ config: null });
      const status = (await send('GET', 'status')).json().result;
      expect(status).toMatchObject({ configured: false, running: false, state: 'needs_login' });
    },
  );

  it.skipIf(!hasWg)('answers 413 for a configuration over the limit', async () => {
    const { send, confFile } = await start();
    const big = `${good()}${'#'.repeat(WG_CONFIG_MAX_BYTES)}\n`;
    expect((await send('POST', 'config', big)).statusCode).toBe(413);
    const huge = 'x'.repeat(3 * WG_CONFIG_MAX_BYTES);
    expect((await send('POST', 'config', huge)).statusCode).toBe(413);
    const file = multipart('file', big);
    expect((await send('POST', 'config', file.body, file.type)).statusCode).toBe(413);
    await expect(stat(confFile)).rejects.toThrow();
  });

  it.skipIf(!hasWg)(
    'saves a configuration (text, JSON or file) 0600 and answers it without secrets; logout deletes it',
    async () => {
      const { send, confFile, app, token } = await start();
      const devicePub = (await runCommand('wg', ['pubkey'], { input: `${priv}\n` })).stdout.trim();
      for (const [body, type] of [
        [good(), 'text/plain'],
        [JSON.stringify({ config: good() }), 'application/json'],
        [multipart('file', good()).body, multipart('file', good()).type],
      ] as const) {
        const res = await send('POST', 'config', body, type);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.body).not.toContain(priv);
        expect(res.json().result.config).toMatchObject({
          public_key: devicePub,
          addresses: ['10.77.0.2/24'],
          peers: [
            {
              public_key: peerPub,
              has_preshared_key: true,
              allowed_ips: ['10.77.0.0/24'],
              endpoint: '198.51.100.2:51820',
              persistent_keepalive: 25,
            },
          ],
        });
      }
      expect((await stat(confFile)).mode & 0o777).toBe(0o600);
      expect(await readFile(confFile, 'utf8')).toBe(good());
      const got = await send('GET', 'config');
      expect(got.body).not.toContain(priv);
      expect(got.json().result.config.public_key).toBe(devicePub);
      const status = (await send('GET', 'status')).json().result;
      expect(status).toMatchObject({ configured: true, running: false, state: 'stopped' });
      expect(JSON.stringify(status)).not.toContain(priv);
      const listed = await app.inject({ url: '/api/apps', headers: { token } });
      const wg = listed.json().result.apps.find((a: { id: string }) => a.id === 'wireguard');
      expect(wg).toMatchObject({ state: 'stopped', addresses: ['10.77.0.2'], running: false });
      if (findExecutable('wireguard-go')) expect(wg.version).toMatch(/^\d+\.\d+\.\d+/);

      expect((await send('POST', 'logout')).json().result).toEqual({
        success: true,
        running: false,
      });
      await expect(stat(confFile)).rejects.toThrow();
      expect((await send('GET', 'config')).json().result).toEqual({ config: null });
      const refused = await send('POST', 'start');
      expect(refused.statusCode).toBe(400);
      expect(refused.json().result.error).toBe('WireguardNotConfiguredError');
    },
  );
});
