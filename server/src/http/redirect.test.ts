import { request } from 'node:http';
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { buildConfig } from '../config';
import { SILENT_LOGGER } from '../log';
import { loadConfigDefaults } from '../paths';
import { edgeLimits } from './edge';
import { createRedirectServer, hostOf, ownNames, redirectLocation } from './redirect';

describe('redirectLocation (issue 9, item 22)', () => {
  const names = ownNames(['kvm.example.org']);
  const at = (host: string | undefined, localAddress = '192.0.2.7', path = '/kvm?x=1'): string =>
    redirectLocation({ host, localAddress, path, httpsPort: 8443, names });

  it("keeps the device's own names and addresses", () => {
    expect(at('localhost:8080')).toBe('https://localhost:8443/kvm?x=1');
    expect(at(`${hostname()}:8080`)).toBe(`https://${hostname().toLowerCase()}:8443/kvm?x=1`);
    expect(at(`${hostname()}.local`)).toBe(
      `https://${hostname().toLowerCase()}.local:8443/kvm?x=1`,
    );
    expect(at('KVM.example.org')).toBe('https://kvm.example.org:8443/kvm?x=1');
    expect(at('127.0.0.1:8080')).toBe('https://127.0.0.1:8443/kvm?x=1');
    expect(at('[::1]:8080')).toBe('https://[::1]:8443/kvm?x=1');
  });

  it('sends any other Host to the address the connection arrived on', () => {
    expect(at('evil.example')).toBe('https://192.0.2.7:8443/kvm?x=1');
    expect(at('evil.example:8080', '::ffff:10.0.0.5')).toBe('https://10.0.0.5:8443/kvm?x=1');
    expect(at('evil.example', 'fe80::1')).toBe('https://[fe80::1]:8443/kvm?x=1');
    expect(at(undefined)).toBe('https://192.0.2.7:8443/kvm?x=1');
    expect(at('localhost@evil.example')).toBe('https://192.0.2.7:8443/kvm?x=1');
    expect(at('localhost/evil')).toBe('https://192.0.2.7:8443/kvm?x=1');
    expect(at('localhost', '192.0.2.7', 'http://evil.example/')).toBe('https://localhost:8443/');
  });

  it('parses Host strictly', () => {
    expect(hostOf('a.b:1')).toBe('a.b');
    expect(hostOf('[::1]')).toBe('::1');
    expect(hostOf('a b')).toBeNull();
    expect(hostOf('')).toBeNull();
  });
});

describe('the redirect listener', () => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  it('never echoes a foreign Host', async () => {
    const config = buildConfig({ server: { names: ['kvm.example.org'] } }, loadConfigDefaults());
    const server = createRedirectServer({
      httpsPort: 8443,
      names: config.server.names,
      limits: edgeLimits(config.server),
      log: SILENT_LOGGER,
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    close = () => new Promise((r) => server.close(() => r()));
    const port = (server.address() as { port: number }).port;
    const get = (host: string): Promise<{ status: number; location?: string }> =>
      new Promise((resolve, reject) => {
        request(
          { host: '127.0.0.1', port, path: '/login', headers: { host }, agent: false },
          (res) => {
            res.resume();
            resolve({ status: res.statusCode ?? 0, location: res.headers.location });
          },
        )
          .on('error', reject)
          .end();
      });
    expect(await get('evil.example')).toEqual({
      status: 301,
      location: 'https://127.0.0.1:8443/login',
    });
    expect((await get('kvm.example.org:80')).location).toBe('https://kvm.example.org:8443/login');
  });
});
