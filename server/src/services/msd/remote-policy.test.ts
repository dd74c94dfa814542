/**
 * write_remote's SSRF guard (item 10) and its bounds (item 14): what it refuses by default,
 * redirects into refused addresses, the allow-list, `timeout`'s range, and a caller that
 * leaves while a silent remote is asked. Every remote here listens on loopback.
 */
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import {
  createServer,
  request,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import type { MsdState } from '@kvm/protocol';
import { addressRefusal, embeddedIpv4, hostAllowed, type RemotePolicy } from './remote-policy';
import { failImageWrites, listen, msdTestApp, type MsdTestApp } from './test-support';

const PUBLIC_ONLY: RemotePolicy = { allowLan: false, allowHosts: [] };
const LAN: RemotePolicy = { allowLan: true, allowHosts: [] };

describe('addressRefusal', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved or broadcast'],
  ])('always refuses %s (%s)', (address, why) => {
    expect(addressRefusal(address, PUBLIC_ONLY)).toBe(why);
    expect(addressRefusal(address, LAN)).toBe(why);
  });

  it.each(['10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.10', '100.64.0.1', 'fd00::1'])(
    'refuses the LAN address %s unless allow_lan',
    (address) => {
      expect(addressRefusal(address, PUBLIC_ONLY)).toBe('a private LAN address');
      if (!address.includes(':')) {
        expect(addressRefusal(`::ffff:${address}`, PUBLIC_ONLY)).toBe('a private LAN address');
      }
      expect(addressRefusal(address, LAN)).toBeNull();
    },
  );

  it.each(['93.184.215.14', '172.32.0.1', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'])(
    'takes the public address %s',
    (address) => expect(addressRefusal(address, PUBLIC_ONLY)).toBeNull(),
  );

  it("refuses the device's own addresses", () => {
    const own = Object.values(networkInterfaces())
      .flat()
      .map((a) => a?.address)
      .filter((a): a is string => a !== undefined);
    for (const a of own) expect(addressRefusal(a, LAN)).not.toBeNull();
  });

  it('finds IPv4 inside IPv6 only where it is', () => {
    expect(embeddedIpv4('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(embeddedIpv4('::1')).toBeNull();
    expect(embeddedIpv4('2001:db8::1')).toBeNull();
  });

  it('matches allow_hosts by host, and by port when one is given', () => {
    const policy = { allowLan: false, allowHosts: ['mirror.lan', '127.0.0.1:8080', '[::1]:81'] };
    expect(hostAllowed(new URL('http://Mirror.LAN:1234/x'), policy)).toBe(true);
    expect(hostAllowed(new URL('http://127.0.0.1:8080/x'), policy)).toBe(true);
    expect(hostAllowed(new URL('http://127.0.0.1:8081/x'), policy)).toBe(false);
    expect(hostAllowed(new URL('http://127.0.0.1/x'), policy)).toBe(false);
    expect(hostAllowed(new URL('http://[::1]:81/x'), policy)).toBe(true);
    expect(hostAllowed(new URL('http://[::1]:82/x'), policy)).toBe(false);
  });
});

describe('write_remote over the guard', () => {
  let t: MsdTestApp | null = null;
  const servers: Server[] = [];

  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      s.close();
    }
    if (t) {
      await t.app.close();
      await rm(t.dataDir, { recursive: true, force: true });
    }
    t = null;
  });

  async function device(remote?: RemotePolicy): Promise<string> {
    t = await msdTestApp(undefined, remote ? { remote } : {});
    return listen(t.app);
  }

  /** A loopback server; `hits` counts the requests it got. */
  async function serve(handler: RequestListener): Promise<{ port: number; hits: () => number }> {
    let hits = 0;
    const server = createServer((req, res) => {
      hits++;
      handler(req, res);
    });
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return { port: (server.address() as AddressInfo).port, hits: () => hits };
  }

  const image = (_req: unknown, res: ServerResponse): void => {
    res.writeHead(200, { 'content-length': '4' }).end('data');
  };

  async function writeRemote(base: string, query: string) {
    const res = await fetch(`${base}/api/msd/write_remote?${query}`, {
      method: 'POST',
      headers: t!.headers,
    });
    return { status: res.status, text: await res.text() };
  }

  async function state(base: string): Promise<MsdState> {
    return (
      (await (await fetch(`${base}/api/msd`, { headers: t!.headers })).json()) as {
        result: MsdState;
      }
    ).result;
  }

  it.each([
    ['127.0.0.1', 'loopback'],
    ['localhost', 'loopback'],
    ['[::ffff:127.0.0.1]', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'],
    ['2130706433', 'loopback'],
  ])('refuses http://%s by default with 400 MsdRemoteRefusedError', async (host, why) => {
    const remote = await serve(image);
    const base = await device();
    const res = await writeRemote(base, `url=http://${host}:${remote.port}/x.iso`);
    expect(res.status).toBe(400);
    const body = JSON.parse(res.text) as { result: { error: string; error_msg: string } };
    expect(body.result.error).toBe('MsdRemoteRefusedError');
    expect(body.result.error_msg).toContain(why);
    expect(remote.hits()).toBe(0);
    const s = await state(base);
    expect(s.busy).toBe(false);
    expect(s.storage.images).toEqual({});
  });

  it('refuses a redirect from an allowed host into a refused one', async () => {
    const target = await serve(image);
    const hop = await serve((_req, res) =>
      res.writeHead(302, { location: `http://localhost:${target.port}/x.iso` }).end(),
    );
    const base = await device({ allowLan: false, allowHosts: [`127.0.0.1:${hop.port}`] });
    const res = await writeRemote(base, `url=http://127.0.0.1:${hop.port}/start`);
    expect(res.status).toBe(400);
    expect((JSON.parse(res.text) as { result: { error: string } }).result.error).toBe(
      'MsdRemoteRefusedError',
    );
    expect(hop.hits()).toBe(1);
    expect(target.hits()).toBe(0);
  });

  it('fetches from an allow-listed host:port, not from its other ports', async () => {
    const listed = await serve(image);
    const other = await serve(image);
    const base = await device({ allowLan: false, allowHosts: [`127.0.0.1:${listed.port}`] });
    const ok = await writeRemote(base, `url=http://127.0.0.1:${listed.port}/ok.iso`);
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('"written":4');
    const refused = await writeRemote(base, `url=http://127.0.0.1:${other.port}/no.iso`);
    expect(refused.status).toBe(400);
    expect(other.hits()).toBe(0);
    expect(Object.keys((await state(base)).storage.images)).toEqual(['ok.iso']);
  });

  it.each(['1e9', '301', '0', '0.05', '-1', 'abc'])(
    'refuses timeout=%s with ValidatorError',
    async (timeout) => {
      const remote = await serve(image);
      const base = await device({ allowLan: false, allowHosts: ['127.0.0.1'] });
      const res = await writeRemote(
        base,
        `url=http://127.0.0.1:${remote.port}/x.iso&timeout=${timeout}`,
      );
      expect(res.status).toBe(400);
      expect((JSON.parse(res.text) as { result: { error: string } }).result.error).toBe(
        'ValidatorError',
      );
      expect(remote.hits()).toBe(0);
    },
  );

  it('a caller who leaves while a silent remote is asked frees MSD', async () => {
    let remoteGone = false;
    const silent = await serve((req) => req.socket.on('close', () => (remoteGone = true)));
    const base = await device({ allowLan: false, allowHosts: ['127.0.0.1'] });
    const req = request(
      `${base}/api/msd/write_remote?url=http://127.0.0.1:${silent.port}/x.iso&timeout=300`,
      { method: 'POST', headers: t!.headers },
    );
    req.on('error', () => undefined);
    req.end();
    await expect.poll(() => silent.hits(), { timeout: 10_000 }).toBe(1);
    expect((await state(base)).busy).toBe(true);
    req.destroy();
    await expect.poll(async () => (await state(base)).busy, { timeout: 10_000 }).toBe(false);
    await expect.poll(() => remoteGone, { timeout: 10_000 }).toBe(true);
    // the region is free for the next caller
    const next = await serve(image);
    const res = await writeRemote(base, `url=http://127.0.0.1:${next.port}/y.iso`);
    expect(res.status).toBe(200);
  });

  it('ends a download whose disk write fails with MsdStorageError, not a payload error', async () => {
    const remote = await serve(image);
    const base = await device({ allowLan: false, allowHosts: ['127.0.0.1'] });
    failImageWrites(t!.msd);
    // the stream ends cut (no final chunk): read it raw until the socket closes
    const text = await new Promise<string>((resolve, reject) => {
      const req = request(
        `${base}/api/msd/write_remote?url=http://127.0.0.1:${remote.port}/x.iso`,
        { method: 'POST', headers: t!.headers },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('error', () => undefined);
          res.on('close', () => resolve(body));
        },
      );
      req.on('error', reject);
      req.end();
    });
    const last = JSON.parse(text.trimEnd().split('\r\n').at(-1)!) as {
      ok: boolean;
      result: { error: string; error_msg: string };
    };
    expect(last).toEqual({
      ok: false,
      result: {
        error: 'MsdStorageError',
        error_msg: 'Writing the image failed: EIO: i/o error, write',
      },
    });
  });

  it("stores a remote's decomposed file name in NFC", async () => {
    const remote = await serve(image);
    const base = await device({ allowLan: false, allowHosts: ['127.0.0.1'] });
    const res = await writeRemote(
      base,
      `url=${encodeURIComponent(`http://127.0.0.1:${remote.port}/caf${encodeURIComponent('e\u0301')}.iso`)}`,
    );
    expect(res.status).toBe(200);
    expect(Object.keys((await state(base)).storage.images)).toEqual(['caf\u00e9.iso']);
  });

  it('refuses a name from the URL over the length bound with ValidatorError', async () => {
    const remote = await serve(image);
    const base = await device({ allowLan: false, allowHosts: ['127.0.0.1'] });
    const res = await writeRemote(
      base,
      `url=${encodeURIComponent(`http://127.0.0.1:${remote.port}/${'n'.repeat(250)}.iso`)}`,
    );
    expect(res.status).toBe(400);
    expect((JSON.parse(res.text) as { result: { error: string } }).result.error).toBe(
      'ValidatorError',
    );
    expect((await state(base)).storage.images).toEqual({});
  });
});
