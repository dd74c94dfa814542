import { crc32, deflateRawSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp, createContext } from '../app';
import { buildConfig } from '../config';
import type { FingerbotDriver } from '../drivers/fingerbot/types';
import { ApiError } from '../errors';
import { loadConfigDefaults } from '../paths';
import { FingerbotService, readFirmwarePackage } from '../services/fingerbot/fingerbot-service';
import { ZIP_ENTRY_MAX_BYTES, ZIP_MAX_ENTRIES, zipEntries } from '../storage/zip';
import { initAndLogin, newApp, tempDataDir } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

interface Entry {
  name: string;
  data: Buffer | string;
  /** Declared uncompressed size (default: the real one). */
  size?: number;
  /** Declared CRC-32 (default: the real one). */
  crc?: number;
  flags?: number;
  stored?: boolean;
}

/** A ZIP written by hand (local headers, central directory, end record), lies included. */
function zipOf(entries: Entry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const data = Buffer.isBuffer(e.data) ? e.data : Buffer.from(e.data);
    const packed = e.stored ? data : deflateRawSync(data);
    const nameBytes = Buffer.from(e.name);
    const crc = e.crc ?? crc32(data);
    const size = e.size ?? data.length;
    const method = e.stored ? 0 : 8;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(e.flags ?? 0, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(e.flags ?? 0, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, packed);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + packed.length;
  }
  const dir = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(dir.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, dir, end]);
}

function zip(files: Record<string, Buffer | string>): Buffer {
  return zipOf(Object.entries(files).map(([name, data]) => ({ name, data })));
}

const MANIFEST = JSON.stringify({
  manifest: { application: { bin_file: 'finger_robot.signed.bin', dat_file: 'x.dat' } },
  version: '2.1.0',
});
const IMAGE = Buffer.alloc(4096, 7);

/** A package whose image entry is `image` (the manifest is honest). */
const withImage = (image: Omit<Entry, 'name'>) =>
  zipOf([
    { name: 'manifest.json', data: MANIFEST },
    { name: 'finger_robot.signed.bin', ...image },
  ]);

async function refusal(pkg: Buffer): Promise<string> {
  const err = await readFirmwarePackage(pkg).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  expect(err).toMatchObject({ wireName: 'FingerbotFirmwareError', status: 400 });
  return (err as Error).message;
}

describe('fingerbot firmware packages', () => {
  it('reads a package and checks the manifest names the image', async () => {
    const pkg = await readFirmwarePackage(
      zip({ 'manifest.json': MANIFEST, 'finger_robot.signed.bin': IMAGE }),
    );
    expect(pkg.version).toBe('2.1.0');
    expect(pkg.image.equals(IMAGE)).toBe(true);
    expect(zipEntries(zip({ a: 'b' }))[0]?.name).toBe('a');
    for (const bad of [
      Buffer.from('not a zip'),
      zip({ 'finger_robot.signed.bin': IMAGE }),
      zip({ 'manifest.json': '{"x":1}', 'finger_robot.signed.bin': IMAGE }),
      zip({ 'manifest.json': MANIFEST }),
      zip({ 'manifest.json': 'nope', 'finger_robot.signed.bin': IMAGE }),
    ]) {
      await expect(readFirmwarePackage(bad)).rejects.toThrow(/Not a fingerbot firmware package/);
    }
  });

  it('refuses zip bombs without inflating past the bounds', async () => {
    // Honest sizes, over the cap: refused from the directory, nothing inflated.
    const huge = Buffer.alloc(ZIP_ENTRY_MAX_BYTES * 2);
    expect(await refusal(withImage({ data: huge }))).toMatch(/declares 33554432 bytes/);
    // Small declared size, 8 MiB of zeros inside: inflation stops one byte past the size.
    const liar = withImage({ data: Buffer.alloc(8 * 1024 * 1024), size: 4096, crc: crc32(IMAGE) });
    expect(liar.length).toBeLessThan(64 * 1024);
    expect(await refusal(liar)).toMatch(/inflates to more than its declared size/);
    // Many entries each under the cap, together over it.
    const many = zipOf([
      { name: 'manifest.json', data: MANIFEST },
      { name: 'finger_robot.signed.bin', data: IMAGE },
      ...Array.from({ length: 3 }, (_, i) => ({ name: `pad${i}`, data: Buffer.alloc(6 << 20) })),
    ]);
    expect(await refusal(many)).toMatch(/together/);
    const crowd = zipOf(
      Array.from({ length: ZIP_MAX_ENTRIES + 1 }, (_, i) => ({ name: `f${i}`, data: 'x' })),
    );
    expect(await refusal(crowd)).toMatch(/too many entries/);
  });

  it('refuses a bad CRC, a lying size, a truncated file, and what it does not support', async () => {
    expect(await refusal(withImage({ data: IMAGE, crc: crc32(IMAGE) ^ 1 }))).toMatch(/CRC-32/);
    expect(await refusal(withImage({ data: IMAGE, size: IMAGE.length + 1 }))).toMatch(
      /not the declared/,
    );
    const good = withImage({ data: IMAGE });
    for (const cut of [good.length - 1, good.length - 30, Math.floor(good.length / 2), 40]) {
      await refusal(good.subarray(0, cut));
    }
    // The central directory is right but the data is cut short (the end record moved up).
    const stored = withImage({ data: IMAGE, stored: true });
    const cd = stored.readUInt32LE(stored.length - 6);
    const shortened = Buffer.concat([stored.subarray(0, cd - 100), stored.subarray(cd)]);
    shortened.writeUInt32LE(cd - 100, shortened.length - 6);
    await refusal(shortened);
    expect(await refusal(withImage({ data: IMAGE, flags: 1 }))).toMatch(/encrypted/);
    const dup = zipOf([
      { name: 'manifest.json', data: MANIFEST },
      { name: 'finger_robot.signed.bin', data: IMAGE },
      { name: 'finger_robot.signed.bin', data: Buffer.alloc(10) },
    ]);
    expect(await refusal(dup)).toMatch(/twice/);
    const zip64 = Buffer.from(good);
    zip64.writeUInt16LE(0xffff, zip64.length - 12);
    zip64.writeUInt16LE(0xffff, zip64.length - 14);
    expect(await refusal(zip64)).toMatch(/ZIP64/);
    // A manifest nested deeper than anyone writes is looked at only so far: a 400, not a crash.
    const deep = `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`;
    await refusal(zip({ 'manifest.json': deep, 'finger_robot.signed.bin': IMAGE }));
  });

  it('takes a package written with a data descriptor flag (sizes from the directory)', async () => {
    const pkg = await readFirmwarePackage(withImage({ data: IMAGE, flags: 8 }));
    expect(pkg.image.equals(IMAGE)).toBe(true);
  });
});

/** A fingerbot that is there, recording what it was flashed with. */
class FakeFingerbot implements FingerbotDriver {
  readonly name = 'fake';
  flashed: string[] = [];
  getState() {
    return { exist: true };
  }
  onState() {
    return () => undefined;
  }
  async press() {}
  async battery() {
    return 80;
  }
  async version() {
    return '1.0.0';
  }
  async upgrade(fw: { image: Buffer; version: string }) {
    this.flashed.push(fw.version);
    return fw.version;
  }
  async init() {}
  async dispose() {}
}

function multipart(file: Buffer): { payload: Buffer; headers: Record<string, string> } {
  const boundary = 'fgbboundary';
  return {
    payload: Buffer.concat([
      Buffer.from(
        `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="fw.zip"\r\n` +
          'content-type: application/zip\r\n\r\n',
      ),
      file,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

describe('/api/fingerbot/upload with a fingerbot', () => {
  it('answers a zip bomb with the 400 envelope and keeps a good package', async () => {
    const dataDir = await tempDataDir();
    const config = buildConfig(
      { data_dir: dataDir, target: 'testbed', webrtc: { stun_url: null } },
      loadConfigDefaults(),
    );
    const ctx = await createContext(config, '0.0.0-test');
    const robot = new FakeFingerbot();
    app = await buildApp({ ...ctx, fingerbot: new FingerbotService(robot, dataDir) });
    const token = await initAndLogin(app);
    const upload = (file: Buffer) =>
      app.inject({
        method: 'POST',
        url: '/api/fingerbot/upload',
        ...multipart(file),
        headers: { token, ...multipart(file).headers },
      });
    let res = await upload(withImage({ data: Buffer.alloc(ZIP_ENTRY_MAX_BYTES + 1) }));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ ok: false, result: { error: 'FingerbotFirmwareError' } });
    res = await upload(withImage({ data: Buffer.alloc(4 << 20), size: 10, crc: 0 }));
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('FingerbotFirmwareError');
    expect(
      (
        await app.inject({ method: 'POST', url: '/api/fingerbot/upgrade', headers: { token } })
      ).json().result.error,
    ).toBe('ValidatorError');
    res = await upload(withImage({ data: IMAGE }));
    expect(res.statusCode).toBe(200);
    res = await app.inject({ method: 'POST', url: '/api/fingerbot/upgrade', headers: { token } });
    expect(res.statusCode).toBe(200);
    expect(robot.flashed).toEqual(['2.1.0']);
  });
});

describe('/api/fingerbot without a fingerbot (testbed)', () => {
  it('says it does not exist and refuses actions', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    expect(
      (await app.inject({ url: '/api/fingerbot/exist', headers: { token } })).json().result,
    ).toEqual({ exist: false });
    const click = await app.inject({
      url: '/api/fingerbot/click?press_time=1000&angle_enum=1',
      headers: { token },
    });
    expect(click.statusCode).toBe(400);
    expect(click.json().result.error).toBe('FingerbotNotFoundError');
    const bad = await app.inject({
      url: '/api/fingerbot/click?press_time=99&angle_enum=1',
      headers: { token },
    });
    expect(bad.json().result.error).toBe('ValidatorError');
  });
});
