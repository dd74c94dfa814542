/**
 * Issue 9 items on virtual media: symbolic links out of the storage (8), the exclusive region
 * and reset (15), reset during an upload (20), long names (17), honest space errors (19), and
 * the defects found after them (concurrent verbs on one name, Unicode tricks).
 */
import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MsdState } from '@kvm/protocol';
import { MSD_IMAGE_BASE_MAX_BYTES } from './image-names';
import { failImageWrites, listen, msdTestApp, postZeros, type MsdTestApp } from './test-support';

let t: MsdTestApp;
/** A folder beside the data folder: what must never be touched through the storage. */
let outside: string;

beforeEach(async () => {
  t = await msdTestApp();
  outside = await mkdtemp(join(tmpdir(), 'kvm-msd-outside-'));
  await writeFile(join(outside, 'victim.iso'), 'outside bytes');
});

afterEach(async () => {
  t.driver.hold = null;
  await t.app.close();
  await rm(t.dataDir, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

const images = (): string => join(t.dataDir, 'msd', 'images');

async function call(method: 'GET' | 'POST', url: string, body?: string) {
  const res = await t.inject({
    method,
    url,
    ...(body !== undefined
      ? { payload: body, headers: { 'content-type': 'application/octet-stream' } }
      : {}),
  });
  return {
    status: res.statusCode,
    json: res.json() as { ok: boolean; result: { error?: string; error_msg?: string } },
  };
}

async function state(): Promise<MsdState> {
  return (await call('GET', '/api/msd')).json.result as unknown as MsdState;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('symbolic links in the storage (item 8)', () => {
  beforeEach(async () => {
    await symlink(outside, join(images(), 'link'));
    await symlink(join(outside, 'victim.iso'), join(images(), 'flink.iso'));
  });

  it('lists neither a linked folder nor a linked file', async () => {
    await writeFile(join(images(), 'real.iso'), 'x');
    expect(Object.keys((await state()).storage.images)).toEqual(['real.iso']);
  });

  it('removes nothing outside through a linked folder or file', async () => {
    for (const name of ['link/victim.iso', 'flink.iso']) {
      const res = await call('POST', `/api/msd/remove?image=${name}`);
      expect(res.status).toBe(400);
      expect(res.json.result.error).toBe('MsdUnknownImageError');
    }
    expect(await readFile(join(outside, 'victim.iso'), 'utf8')).toBe('outside bytes');
  });

  it('neither selects nor reads an outside file', async () => {
    for (const name of ['link/victim.iso', 'flink.iso']) {
      expect((await call('POST', `/api/msd/set_params?image=${name}`)).json.result.error).toBe(
        'MsdUnknownImageError',
      );
      expect((await call('GET', `/api/msd/read?image=${name}`)).json.result.error).toBe(
        'MsdUnknownImageError',
      );
    }
    expect((await state()).drive.image).toBeNull();
  });

  it('writes nothing outside through a linked folder', async () => {
    const res = await call('POST', '/api/msd/write?image=x.iso&prefix=link/new', 'evil');
    expect(res.status).toBe(400);
    expect(res.json.result.error).toBe('ValidatorError');
    expect(res.json.result.error_msg).toMatch(/symbolic link/);
    expect((await readdir(outside)).sort()).toEqual(['victim.iso']);
    expect((await call('POST', '/api/msd/write?image=y.iso&prefix=link', 'evil')).status).toBe(400);
    expect((await readdir(outside)).sort()).toEqual(['victim.iso']);
  });

  it('never hands the driver a file reached through a link swapped in after selection', async () => {
    await mkdir(join(images(), 'd'));
    await writeFile(join(images(), 'd', 'victim.iso'), 'inside');
    expect((await call('POST', '/api/msd/set_params?image=d/victim.iso')).status).toBe(200);
    // a shell swaps the folder for a link to the outside one, which has a file of that name
    await rename(join(images(), 'd'), join(images(), 'd-old'));
    await symlink(outside, join(images(), 'd'));
    const res = await call('POST', '/api/msd/set_connected?connected=1');
    expect(res.json.result.error).toBe('MsdUnknownImageError');
    expect(t.driver.image).toBeNull();
    expect(t.driver.calls.filter((c) => c.startsWith('connectImage'))).toEqual([]);
  });

  it('refuses to lend the storage folder while it holds a link', async () => {
    const res = await call('GET', '/api/msd/partition_connect');
    expect(res.status).toBe(400);
    expect(res.json.result.error).toBe('MsdStorageLinkError');
    expect(res.json.result.error_msg).toMatch(/'flink\.iso'|'link'/);
    expect(t.driver.partition).toBeNull();
    await rm(join(images(), 'link'));
    await rm(join(images(), 'flink.iso'));
    expect((await call('GET', '/api/msd/partition_connect')).status).toBe(200);
  });

  it('formats the storage without following a link out of it', async () => {
    expect((await call('GET', '/api/msd/partition_format')).status).toBe(200);
    expect(await readdir(images())).toEqual([]);
    expect(await readFile(join(outside, 'victim.iso'), 'utf8')).toBe('outside bytes');
  });
});

describe('one exclusive region (item 15)', () => {
  it('a reset during a slow plug leaves the drive disconnected and MSD not busy', async () => {
    await call('POST', '/api/msd/write?image=x.iso', 'x');
    await call('POST', '/api/msd/set_params?image=x.iso');
    const gate = deferred();
    t.driver.hold = gate.promise;
    const plug = call('POST', '/api/msd/set_connected?connected=1');
    await expect.poll(() => t.driver.calls.some((c) => c.startsWith('connectImage'))).toBe(true);
    expect(t.msd.getState().busy).toBe(true);
    const reset = call('POST', '/api/msd/reset');
    gate.resolve();
    const [plugged, reseted] = await Promise.all([plug, reset]);
    expect(plugged.status).toBe(200);
    expect(reseted.status).toBe(200);
    // the reset ran after the plug: what the plug lent, the reset took back
    expect(t.driver.calls.slice(-2)).toEqual(['disconnectImage', 'disconnectPartition']);
    expect(t.driver.image).toBeNull();
    const s = await state();
    expect(s.busy).toBe(false);
    expect(s.drive.connected).toBe(false);
  });

  it('runs exactly one verb at a time; the others are 409 at once', async () => {
    await call('POST', '/api/msd/write?image=x.iso', 'x');
    await call('POST', '/api/msd/write?image=y.iso', 'y');
    await call('POST', '/api/msd/set_params?image=x.iso');
    const gate = deferred();
    t.driver.hold = gate.promise;
    const plug = call('POST', '/api/msd/set_connected?connected=1');
    await expect.poll(() => t.msd.getState().busy).toBe(true);
    const others = await Promise.all([
      call('POST', '/api/msd/set_connected?connected=1'),
      call('POST', '/api/msd/set_params?image=y.iso'),
      call('POST', '/api/msd/remove?image=y.iso'),
      call('GET', '/api/msd/partition_connect'),
      call('GET', '/api/msd/partition_format'),
    ]);
    expect(others.map((r) => [r.status, r.json.result.error])).toEqual(
      others.map(() => [409, 'MsdIsBusyError']),
    );
    gate.resolve();
    expect((await plug).status).toBe(200);
    expect(t.driver.calls.filter((c) => c.startsWith('connect'))).toHaveLength(1);
    expect(Object.keys((await state()).storage.images).sort()).toEqual(['x.iso', 'y.iso']);
  });
});

describe('reset during an upload (item 20)', () => {
  it('answers the uploader with MsdTransferAbortedError and leaves no complete image', async () => {
    const base = await listen(t.app);
    const gate = deferred();
    const size = 8 * 1024 * 1024;
    const answer = postZeros(t.headers, `${base}/api/msd/write?image=big.iso`, size, {
      chunk: 256 * 1024,
      hold: { at: 1024 * 1024, until: gate.promise },
    });
    // mid-body: a part on disk, the rest not sent
    await expect
      .poll(() => t.msd.getState().storage.uploading?.written ?? 0, { timeout: 10_000 })
      .toBeGreaterThan(0);
    expect((await call('POST', '/api/msd/reset')).status).toBe(200);
    const res = await answer;
    gate.resolve();
    expect(res).not.toBe('cut');
    if (res === 'cut') return;
    expect(res.status).toBe(409);
    expect(res.json()).toEqual({
      ok: false,
      result: {
        error: 'MsdTransferAbortedError',
        error_msg: 'The upload was stopped by a reset',
      },
    });
    const s = await state();
    expect(s.busy).toBe(false);
    expect(s.storage.uploading).toBeNull();
    expect(s.storage.images['big.iso']?.complete).toBe(false);
  });
});

describe('a lying Content-Length', () => {
  it('a body shorter than announced, then a half-close, leaves no complete image and frees MSD', async () => {
    const base = new URL(await listen(t.app));
    const socket = connect(Number(base.port), base.hostname);
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString()));
    socket.on('error', () => undefined);
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `POST /api/msd/write?image=short.iso HTTP/1.1\r\nHost: x\r\nToken: ${t.headers.token}\r\n` +
        'Content-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n',
    );
    socket.write(Buffer.alloc(1000, 7));
    await expect.poll(() => t.msd.getState().storage.uploading?.written ?? 0).toBe(1000);
    socket.end();
    await expect.poll(() => t.msd.getState().busy).toBe(false);
    socket.destroy();
    expect(answer).not.toMatch(/ 500 /);
    const s = await state();
    expect(s.storage.images['short.iso']).toMatchObject({ complete: false, size: 1000 });
    // the next upload of that name with remove_incomplete replaces it
    const again = await call('POST', '/api/msd/write?image=short.iso&remove_incomplete=1', 'ok');
    expect(again.status).toBe(200);
  });
});

describe('names (item 17) and messages (item 19)', () => {
  it(`refuses a file name over ${MSD_IMAGE_BASE_MAX_BYTES} bytes with 400, takes one at it`, async () => {
    expect(MSD_IMAGE_BASE_MAX_BYTES).toBe(241);
    for (const name of ['a'.repeat(242), 'a'.repeat(255), 'é'.repeat(121)]) {
      const res = await call('POST', `/api/msd/write?image=${encodeURIComponent(name)}`, 'x');
      expect(res.status).toBe(400);
      expect(res.json.result.error).toBe('ValidatorError');
      expect(res.json.result.error_msg).toMatch(/241 bytes/);
    }
    const prefixed = await call('POST', `/api/msd/write?image=${'b'.repeat(242)}&prefix=isos`, 'x');
    expect(prefixed.json.result.error).toBe('ValidatorError');
    expect(await readdir(images())).toEqual([]);
    const ok = await call('POST', `/api/msd/write?image=${'a'.repeat(241)}`, 'x');
    expect(ok.status).toBe(200);
  });

  it.each([
    ['a decomposed é', 'e\u0301.iso', '', /NFC/],
    ['a decomposed prefix', 'x.iso', 'caf\u0065\u0301', /NFC/],
    ['a right-to-left override', 'x\u202eosi.exe', '', /invisible or direction/],
    ['a zero-width space', 'x\u200b.iso', '', /invisible or direction/],
  ])('refuses a new name with %s (400, nothing written)', async (_what, image, prefix, why) => {
    const query = `image=${encodeURIComponent(image)}&prefix=${encodeURIComponent(prefix)}`;
    const res = await call('POST', `/api/msd/write?${query}`, 'x');
    expect(res.status).toBe(400);
    expect(res.json.result.error).toBe('ValidatorError');
    expect(res.json.result.error_msg).toMatch(why);
    expect(await readdir(images())).toEqual([]);
  });

  it('keeps one image per name as it looks: composed é uploads, a second one is refused', async () => {
    expect((await call('POST', '/api/msd/write?image=%C3%A9.iso', 'x')).status).toBe(200);
    const again = await call('POST', '/api/msd/write?image=e%CC%81.iso', 'y');
    expect(again.status).toBe(400);
    expect(Object.keys((await state()).storage.images)).toEqual(['é.iso']);
  });

  it('answers a concurrent upload of the same name with 409 and writes it once', async () => {
    const base = await listen(t.app);
    const gate = deferred();
    const first = postZeros(t.headers, `${base}/api/msd/write?image=same.iso`, 2 * 1024 * 1024, {
      chunk: 256 * 1024,
      hold: { at: 512 * 1024, until: gate.promise },
    });
    await expect.poll(() => t.msd.getState().storage.uploading?.name).toBe('same.iso');
    const second = await call('POST', '/api/msd/write?image=same.iso', 'other');
    expect(second.status).toBe(409);
    expect(second.json.result.error).toBe('MsdIsBusyError');
    gate.resolve();
    const res = await first;
    expect(res !== 'cut' && res.status).toBe(200);
    expect((await state()).storage.images['same.iso']).toMatchObject({
      complete: true,
      size: 2 * 1024 * 1024,
    });
  });

  it('says the disk failed when a write fails (not that the client did)', async () => {
    failImageWrites(t.msd);
    const res = await call('POST', '/api/msd/write?image=x.iso', 'some bytes');
    expect(res.status).toBe(500);
    expect(res.json.result).toEqual({
      error: 'MsdStorageError',
      error_msg: 'Writing the image failed: EIO: i/o error, write',
    });
    expect((await state()).busy).toBe(false);
  });

  it('says "insufficient", not "filled up", when the size is refused before a byte', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/api/msd/write?image=huge.iso',
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(2 ** 52) },
      payload: 'x',
    });
    expect(res.statusCode).toBe(507);
    expect(res.json().result.error_msg).toMatch(
      /^The storage space is insufficient: the image needs/,
    );
    expect(res.json().result.error_msg).not.toMatch(/filled up/);
  });
});
