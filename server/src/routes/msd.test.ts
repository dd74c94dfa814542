import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { isFullMsdState, type MsdState, type MsdStatePartial } from '@kvm/protocol';
import { msdTestApp, type MsdTestApp } from '../services/msd/test-support';
import { initAndLogin, newApp } from '../test-helpers';

let t: MsdTestApp;

beforeEach(async () => {
  t = await msdTestApp();
});

afterEach(async () => {
  await t.app.close();
  await rm(t.dataDir, { recursive: true, force: true });
});

const images = (): string => join(t.dataDir, 'msd', 'images');

async function call(method: 'GET' | 'POST', url: string, body?: string | Buffer) {
  const res = await t.inject({
    method,
    url,
    ...(body !== undefined
      ? { payload: body, headers: { 'content-type': 'application/octet-stream' } }
      : {}),
  });
  return { status: res.statusCode, json: res.json() as { ok: boolean; result: Result } };
}

/** What the assertions read from a result (each route fills a part of it). */
interface Result {
  error?: string;
  error_msg?: string;
  image: { name: string; size: number; written: number };
  devices: Record<string, { path: string; size: number; filesystem: string }>;
}

async function upload(name: string, data: string | Buffer, query = '') {
  return call('POST', `/api/msd/write?image=${encodeURIComponent(name)}${query}`, data);
}

async function state(): Promise<MsdState> {
  return (await call('GET', '/api/msd')).json.result as unknown as MsdState;
}

describe('GET /api/msd', () => {
  it('has the GL shape with an empty storage', async () => {
    const s = await state();
    expect(s).toMatchObject({
      enabled: true,
      online: true,
      busy: false,
      storage: { images: {}, downloading: null, uploading: null },
      drive: { image: null, connected: false, cdrom: true, rw: false },
      drive_partition: { image: null, connected: false, cdrom: false },
    });
    expect(s.storage.parts['']!.size).toBeGreaterThan(0);
    expect(s.storage.parts['']!.free).toBeGreaterThan(0);
    expect(s.storage.parts['']!.writable).toBe(true);
    expect((await stat(images())).isDirectory()).toBe(true);
  });

  it('lists images newest first, folders included, incomplete ones marked', async () => {
    await upload('old.iso', 'a');
    await new Promise((r) => setTimeout(r, 20));
    await upload('new.img', 'bb', '&prefix=isos');
    // a write cut by a crash: its marker is still there
    await writeFile(join(images(), 'cut.bin'), 'ccc');
    await writeFile(join(images(), '.__cut.bin.incomplete'), '');
    const s = await state();
    expect(Object.keys(s.storage.images)).toEqual(['cut.bin', 'isos/new.img', 'old.iso']);
    expect(s.storage.images['isos/new.img']).toMatchObject({ complete: true, size: 2 });
    expect(s.storage.images['cut.bin']).toMatchObject({ complete: false, size: 3 });
    expect(typeof s.storage.images['old.iso']!.mod_ts).toBe('number');
  });

  it('marks uploaded images writable, disc images (.iso) read-only, as kvmd 4.2xx', async () => {
    await upload('disc.ISO', 'a');
    await upload('stick.img', 'b');
    await call('POST', '/api/msd/set_params?image=stick.img');
    const s = await state();
    expect(s.storage.images['disc.ISO']).toMatchObject({ writable: false, removable: true });
    expect(s.storage.images['stick.img']).toMatchObject({ writable: true, removable: true });
    expect(s.drive.image).toMatchObject({ name: 'stick.img', in_storage: true, writable: true });
  });
});

describe('POST /api/msd/write', () => {
  it('writes the body and answers with its size', async () => {
    const res = await upload('x.iso', Buffer.from('hello'), '&prefix=isos/');
    expect(res).toEqual({
      status: 200,
      json: { ok: true, result: { image: { name: 'isos/x.iso', size: 5, written: 5 } } },
    });
    expect(await readFile(join(images(), 'isos', 'x.iso'), 'utf8')).toBe('hello');
    expect(await readdir(join(images(), 'isos'))).toEqual(['x.iso']);
  });

  it('refuses an existing name with MsdImageExistsError', async () => {
    await upload('x.iso', 'one');
    const res = await upload('x.iso', 'two');
    expect(res.status).toBe(400);
    expect(res.json.result).toEqual({
      error: 'MsdImageExistsError',
      error_msg: 'This image already exists',
    });
    expect(await readFile(join(images(), 'x.iso'), 'utf8')).toBe('one');
  });

  it('replaces an incomplete image only with remove_incomplete', async () => {
    await writeFile(join(images(), 'x.iso'), 'partial');
    await writeFile(join(images(), '.__x.iso.incomplete'), '');
    expect((await upload('x.iso', 'whole')).json.result.error).toBe('MsdImageExistsError');
    expect((await upload('x.iso', 'whole', '&remove_incomplete=1')).status).toBe(200);
    expect(await readFile(join(images(), 'x.iso'), 'utf8')).toBe('whole');
    expect(await readdir(images())).toEqual(['x.iso']);
  });

  it('needs a Content-Length (a chunked body has none)', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/api/msd/write?image=x.iso',
      headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
      payload: '5\r\nhello\r\n0\r\n\r\n',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('ValidatorError');
    expect(res.json().result.error_msg).toMatch(/None argument is not a valid int.*Content-Length/);
    expect(await readdir(images())).toEqual([]);
  });

  it('refuses more than the free space with 507 before writing anything', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/api/msd/write?image=huge.iso',
      headers: {
        'content-type': 'application/octet-stream',
        'content-length': String(2 ** 52),
      },
      payload: 'x',
    });
    expect(res.statusCode).toBe(507);
    expect(res.json().result.error).toBe('MsdNoSpaceError');
    expect(res.headers['connection']).toBe('close');
    expect(await readdir(images())).toEqual([]);
  });

  it.each([
    ['image=../x.iso', 'image'],
    ['image=a/../../x.iso', 'image'],
    ['image=%2Fetc%2Fpasswd', 'image'],
    ['image=.hidden', 'image'],
    ['image=x.iso&prefix=..', 'prefix'],
    ['image=x.iso&prefix=a/../..', 'prefix'],
    ['image=x.iso&prefix=%2Ftmp', 'prefix'],
    ['image=x%00.iso', 'image'],
    ['image=a%5C..%5Cx.iso', 'image'],
    ['image=.__x.iso.incomplete', 'image'],
    ['image=', 'image'],
  ])('refuses the traversal %s (400, nothing written)', async (query, arg) => {
    const before = (await readdir(t.dataDir)).sort();
    const res = await t.inject({
      method: 'POST',
      url: `/api/msd/write?${query}`,
      headers: { 'content-type': 'application/octet-stream' },
      payload: 'evil',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('ValidatorError');
    expect(res.json().result.error_msg).toContain(`'${arg}'`);
    expect(await readdir(join(t.dataDir, 'msd'))).toEqual(['images']);
    expect(await readdir(images())).toEqual([]);
    // nothing beside the storage either (the data folder also holds the app's own files)
    expect((await readdir(t.dataDir)).sort()).toEqual(before);
  });

  it('takes UTF-8 names', async () => {
    const res = await upload('диск 1.iso', 'x', `&prefix=${encodeURIComponent('образы')}`);
    expect(res.json.result.image.name).toBe('образы/диск 1.iso');
    expect(await readdir(join(images(), 'образы'))).toEqual(['диск 1.iso']);
  });
});

describe('POST /api/msd/remove', () => {
  it('removes an image and the folder it leaves empty', async () => {
    await upload('x.iso', 'x', '&prefix=a/b');
    expect((await call('POST', '/api/msd/remove?image=a/b/x.iso')).status).toBe(200);
    expect(await readdir(images())).toEqual([]);
  });

  it('refuses an unknown image and a mounted one', async () => {
    expect((await call('POST', '/api/msd/remove?image=nope.iso')).json.result.error).toBe(
      'MsdUnknownImageError',
    );
    await upload('x.iso', 'x');
    await call('POST', '/api/msd/set_params?image=x.iso');
    await call('POST', '/api/msd/set_connected?connected=1');
    const res = await call('POST', '/api/msd/remove?image=x.iso');
    expect(res.status).toBe(400);
    expect(res.json.result.error).toBe('MsdImageInUseError');
    await call('POST', '/api/msd/set_connected?connected=0');
    expect((await call('POST', '/api/msd/remove?image=x.iso')).status).toBe(200);
    // removing the selected image unselects it
    expect((await state()).drive.image).toBeNull();
  });

  it('removes an image left incomplete', async () => {
    await writeFile(join(images(), 'cut.iso'), 'xx');
    await writeFile(join(images(), '.__cut.iso.incomplete'), '');
    expect((await call('POST', '/api/msd/remove?image=cut.iso')).status).toBe(200);
    expect(await readdir(images())).toEqual([]);
  });
});

describe('set_params and set_connected', () => {
  it('selects, mounts as CD-ROM, unmounts', async () => {
    await upload('x.iso', 'iso');
    expect((await call('POST', '/api/msd/set_params?image=x.iso&cdrom=1')).status).toBe(200);
    expect((await state()).drive).toMatchObject({
      image: { name: 'x.iso', in_storage: true, complete: true, size: 3 },
      connected: false,
      cdrom: true,
      rw: false,
    });
    expect((await call('POST', '/api/msd/set_connected?connected=true')).status).toBe(200);
    expect(t.driver.calls).toEqual([`connectImage ${join(images(), 'x.iso')} cdrom=true rw=false`]);
    expect((await state()).drive.connected).toBe(true);
    expect((await call('POST', '/api/msd/set_connected?connected=false')).status).toBe(200);
    expect(t.driver.calls.at(-1)).toBe('disconnectImage');
  });

  it('cdrom=1 forces rw off; rw=1 makes a flash drive', async () => {
    await upload('x.img', 'img');
    await call('POST', '/api/msd/set_params?image=x.img&rw=1');
    expect((await state()).drive).toMatchObject({ cdrom: false, rw: true });
    await call('POST', '/api/msd/set_params?cdrom=1');
    expect((await state()).drive).toMatchObject({ cdrom: true, rw: false });
    await call('POST', '/api/msd/set_params?cdrom=0&rw=1');
    await call('POST', '/api/msd/set_connected?connected=1');
    expect(t.driver.calls.at(-1)).toBe(
      `connectImage ${join(images(), 'x.img')} cdrom=false rw=true`,
    );
  });

  it('answers the kvmd error classes', async () => {
    const err = async (url: string) => (await call('POST', url)).json.result.error;
    expect(await err('/api/msd/set_connected?connected=1')).toBe('MsdImageNotSelected');
    expect(await err('/api/msd/set_connected?connected=0')).toBe('MsdDisconnectedError');
    expect(await err('/api/msd/set_params?image=nope.iso')).toBe('MsdUnknownImageError');
    expect(await err('/api/msd/set_connected?connected=maybe')).toBe('ValidatorError');
    await writeFile(join(images(), 'cut.iso'), 'xx');
    await writeFile(join(images(), '.__cut.iso.incomplete'), '');
    expect(await err('/api/msd/set_params?image=cut.iso')).toBe('MsdUnknownImageError');
    await upload('x.iso', 'iso');
    await call('POST', '/api/msd/set_params?image=x.iso');
    expect((await call('POST', '/api/msd/set_connected?connected=1')).status).toBe(200);
    expect(await err('/api/msd/set_connected?connected=1')).toBe('MsdConnectedError');
    expect(await err('/api/msd/set_params?cdrom=0')).toBe('MsdConnectedError');
    await call('POST', '/api/msd/set_connected?connected=0');
    // the image went behind our back
    await rm(join(images(), 'x.iso'));
    expect(await err('/api/msd/set_connected?connected=1')).toBe('MsdUnknownImageError');
  });

  it('a driver failure is a 500 that says why; an offline driver is MsdOfflineError', async () => {
    await upload('tiny.iso', 'x');
    await call('POST', '/api/msd/set_params?image=tiny.iso');
    t.driver.failNext = 'Could not open tiny.iso: not a CD image';
    const res = await call('POST', '/api/msd/set_connected?connected=1');
    expect(res.status).toBe(500);
    expect(res.json.result).toEqual({
      error: 'MsdConnectError',
      error_msg: 'The image could not be connected: Could not open tiny.iso: not a CD image',
    });
    expect((await state()).drive.connected).toBe(false);
    t.driver.setOnline(false);
    expect((await call('POST', '/api/msd/set_connected?connected=1')).json.result.error).toBe(
      'MsdOfflineError',
    );
    expect((await state()).online).toBe(false);
  });

  it('remembers the selection across a restart, but not the connection', async () => {
    await upload('x.img', 'img');
    await call('POST', '/api/msd/set_params?image=x.img&rw=1');
    await call('POST', '/api/msd/set_connected?connected=1');
    await t.app.close();
    const again = await msdTestApp(t.dataDir);
    try {
      expect(again.msd.getState().drive).toMatchObject({
        image: { name: 'x.img' },
        connected: false,
        cdrom: false,
        rw: true,
      });
      expect(again.driver.calls).toEqual([]);
    } finally {
      await again.app.close();
    }
    expect(JSON.parse(await readFile(join(t.dataDir, 'msd', 'state.json'), 'utf8'))).toEqual({
      enabled: true,
      image: 'x.img',
      cdrom: false,
      rw: true,
    });
  });
});

describe('partition', () => {
  it('lends the storage folder, shows it, formats it only when disconnected', async () => {
    await upload('x.iso', 'x', '&prefix=isos');
    const show = (await call('GET', '/api/msd/partition_show')).json.result;
    expect(show.devices[images()]).toMatchObject({
      path: images(),
      label: 'KVM',
      is_current: true,
    });
    expect(show.devices[images()]!.size).toBeGreaterThan(0);
    expect(typeof show.devices[images()]!.filesystem).toBe('string');

    expect((await call('GET', '/api/msd/partition_connect')).status).toBe(200);
    expect(t.driver.calls).toEqual([`connectPartition ${images()}`]);
    expect((await state()).drive_partition.connected).toBe(true);
    expect((await call('GET', '/api/msd/partition_connect')).json.result.error).toBe(
      'MsdConnectedError',
    );
    expect((await call('GET', '/api/msd/partition_format')).json.result.error).toBe(
      'MsdConnectedError',
    );
    // the storage is lent: it does not change under the remote computer
    expect((await upload('y.iso', 'y')).json.result.error).toBe('MsdConnectedError');
    expect((await call('POST', '/api/msd/remove?image=isos/x.iso')).json.result.error).toBe(
      'MsdConnectedError',
    );
    expect((await call('GET', '/api/msd/partition_disconnect')).status).toBe(200);
    expect((await call('GET', '/api/msd/partition_disconnect')).json.result.error).toBe(
      'MsdDisconnectedError',
    );
    // GL's partition verbs are GETs: the app answers another method 405
    expect((await call('POST', '/api/msd/partition_connect')).status).toBe(405);

    // formatting refuses while the drive is connected, too
    await call('POST', '/api/msd/set_params?image=isos/x.iso');
    await call('POST', '/api/msd/set_connected?connected=1');
    expect((await call('GET', '/api/msd/partition_format')).json.result.error).toBe(
      'MsdConnectedError',
    );
    await call('POST', '/api/msd/set_connected?connected=0');
    expect((await call('GET', '/api/msd/partition_format')).status).toBe(200);
    expect(await readdir(images())).toEqual([]);
    const s = await state();
    expect(s.storage.images).toEqual({});
    expect(s.drive.image).toBeNull();
  });

  it('reset disconnects everything', async () => {
    await upload('x.iso', 'x');
    await call('POST', '/api/msd/set_params?image=x.iso');
    await call('POST', '/api/msd/set_connected?connected=1');
    await call('GET', '/api/msd/partition_connect');
    expect((await call('POST', '/api/msd/reset')).status).toBe(200);
    const s = await state();
    expect(s.drive.connected).toBe(false);
    expect(s.drive_partition.connected).toBe(false);
    expect(s.busy).toBe(false);
    expect(t.driver.image).toBeNull();
    expect(t.driver.partition).toBeNull();
  });
});

describe('enabled', () => {
  it('set_enabled saves, restarts; disabled refuses every route but GET and set_enabled', async () => {
    expect((await call('POST', '/api/msd/set_enabled?enabled=0')).status).toBe(200);
    expect(t.restarts).toBe(1);
    // the same value again: nothing to restart for
    await call('POST', '/api/msd/set_enabled?enabled=0');
    expect(t.restarts).toBe(1);
    const s = await state();
    expect(s.enabled).toBe(false);
    expect(s.online).toBe(false);
    for (const [method, url] of [
      ['POST', '/api/msd/set_params?cdrom=1'],
      ['POST', '/api/msd/set_connected?connected=1'],
      ['POST', '/api/msd/write?image=x.iso'],
      ['POST', '/api/msd/write_remote?url=http://127.0.0.1:1/x.iso'],
      ['POST', '/api/msd/remove?image=x.iso'],
      ['POST', '/api/msd/reset'],
      ['GET', '/api/msd/partition_show'],
      ['GET', '/api/msd/partition_connect'],
      ['GET', '/api/msd/partition_disconnect'],
      ['GET', '/api/msd/partition_format'],
      ['GET', '/api/msd/read?image=x.iso'],
    ] as const) {
      const res = await call(method, url, url.includes('/write') ? 'x' : undefined);
      expect({ url, status: res.status, error: res.json.result.error }).toEqual({
        url,
        status: 400,
        error: 'MsdDisabledError',
      });
    }
    expect(JSON.parse(await readFile(join(t.dataDir, 'msd', 'state.json'), 'utf8')).enabled).toBe(
      false,
    );
    expect((await call('POST', '/api/msd/set_enabled?enabled=1')).status).toBe(200);
    expect(t.restarts).toBe(2);
  });
});

describe('GET /api/msd/read', () => {
  it('downloads a complete image', async () => {
    await upload('x.iso', 'content', '&prefix=isos');
    const res = await t.inject({ method: 'GET', url: '/api/msd/read?image=isos/x.iso' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('content');
    expect(res.headers['content-disposition']).toBe("attachment; filename*=UTF-8''x.iso");
    const bad = await t.inject({
      method: 'GET',
      url: '/api/msd/read?image=x.iso&compress=lzma',
    });
    expect(bad.statusCode).toBe(400);
  });
});

describe('the msd event', () => {
  it('sends the full state first, then only what changed', async () => {
    const provider = t.msd.provider();
    const seen: Array<MsdState | MsdStatePartial> = [];
    const off = provider.subscribe((e) => seen.push(e.event as MsdState | MsdStatePartial));
    const [first] = await provider.snapshot();
    expect(first!.event_type).toBe('msd');
    expect(isFullMsdState(first!.event as MsdState)).toBe(true);

    await upload('x.iso', 'iso');
    await call('POST', '/api/msd/set_params?image=x.iso');
    await call('POST', '/api/msd/set_connected?connected=1');
    off();
    expect(seen.length).toBeGreaterThan(0);
    for (const e of seen) {
      expect(isFullMsdState(e)).toBe(false);
      expect(
        Object.keys(e).every((k) => ['busy', 'drive', 'drive_partition', 'storage'].includes(k)),
      ).toBe(true);
      if ('storage' in e) {
        expect(
          Object.keys(e.storage!).every((k) =>
            ['images', 'parts', 'downloading', 'uploading'].includes(k),
          ),
        ).toBe(true);
      }
    }
    // the upload added the image; the selection and the connection changed the drive, not the
    // images (parts may come along: the free space of a shared disk moves all the time)
    expect(seen.some((e) => e.storage?.images?.['x.iso']?.complete === true)).toBe(true);
    const drives = seen.filter((e) => e.drive).map((e) => e.drive!);
    expect(drives.at(-1)).toMatchObject({ connected: true, image: { name: 'x.iso' } });
    const connectEvents = seen.slice(seen.findIndex((e) => e.drive?.image?.name === 'x.iso'));
    expect(connectEvents.every((e) => e.storage?.images === undefined)).toBe(true);
    // busy went up and down around the plug
    expect(seen.filter((e) => e.busy !== undefined).map((e) => e.busy)).toEqual(
      expect.arrayContaining([true, false]),
    );
  });

  it('sends the full state again when online flips', async () => {
    const seen: Array<MsdState | MsdStatePartial> = [];
    const off = t.msd.provider().subscribe((e) => seen.push(e.event as MsdStatePartial));
    t.driver.setOnline(false);
    t.driver.setOnline(true);
    off();
    expect(seen).toHaveLength(2);
    expect(seen.every((e) => isFullMsdState(e))).toBe(true);
    expect(seen.map((e) => (e as MsdState).online)).toEqual([false, true]);
  });

  it('drops an orphan marker at start', async () => {
    await mkdir(join(images(), 'isos'), { recursive: true });
    await writeFile(join(images(), 'isos', '.__gone.iso.incomplete'), '');
    await t.app.close();
    const again = await msdTestApp(t.dataDir);
    await again.app.close();
    expect(await readdir(join(images(), 'isos'))).toEqual([]);
  });
});

describe('on the testbed target (no virtual media driver)', () => {
  let app: FastifyInstance | null = null;

  afterEach(async () => {
    await app?.close();
    app = null;
  });

  it('guards the routes, uploads, and shows the image in the state', async () => {
    app = await newApp();
    await app.ready();
    expect(app.hasRoute({ method: 'POST', url: '/api/msd/write' })).toBe(true);
    const a = app;
    expect((await a.inject({ method: 'GET', url: '/api/msd' })).statusCode).toBe(401);
    const token = await initAndLogin(a);
    const up = await a.inject({
      method: 'POST',
      url: '/api/msd/write?image=x.iso&prefix=isos',
      headers: { token, 'content-type': 'application/octet-stream' },
      payload: Buffer.from('iso bytes'),
    });
    expect(up.json()).toEqual({
      ok: true,
      result: { image: { name: 'isos/x.iso', size: 9, written: 9 } },
    });
    const state = (await a.inject({ method: 'GET', url: '/api/msd', headers: { token } })).json();
    expect(state.ok).toBe(true);
    expect(state.result.storage.images['isos/x.iso']).toMatchObject({ complete: true, size: 9 });
    // the testbed target has no virtual media driver
    expect(state.result.online).toBe(false);
    await a.inject({
      method: 'POST',
      url: '/api/msd/set_params?image=isos/x.iso',
      headers: { token },
    });
    const plug = await a.inject({
      method: 'POST',
      url: '/api/msd/set_connected?connected=1',
      headers: { token },
    });
    expect(plug.statusCode).toBe(400);
    expect(plug.json().result.error).toBe('MsdOfflineError');
  });
});
