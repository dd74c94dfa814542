import { crc32, deflateRawSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { readFirmwarePackage } from '../services/fingerbot/fingerbot-service';
import { zipEntries } from '../services/fingerbot/zip';
import { initAndLogin, newApp } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

/** A ZIP written by hand (local headers, central directory, end record), deflated entries. */
function zip(files: Record<string, Buffer | string>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of Object.entries(files)) {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
    const packed = deflateRawSync(data);
    const nameBytes = Buffer.from(name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(crc32(data), 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(crc32(data), 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, packed);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + packed.length;
  }
  const dir = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(dir.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, dir, end]);
}

const MANIFEST = JSON.stringify({
  manifest: { application: { bin_file: 'finger_robot.signed.bin', dat_file: 'x.dat' } },
  version: '2.1.0',
});

describe('fingerbot firmware packages', () => {
  it('reads a package and checks the manifest names the image', () => {
    const image = Buffer.alloc(4096, 7);
    const pkg = readFirmwarePackage(
      zip({ 'manifest.json': MANIFEST, 'finger_robot.signed.bin': image }),
    );
    expect(pkg.version).toBe('2.1.0');
    expect(pkg.image.equals(image)).toBe(true);
    expect(zipEntries(zip({ a: 'b' }))[0]?.name).toBe('a');
    for (const bad of [
      Buffer.from('not a zip'),
      zip({ 'finger_robot.signed.bin': image }),
      zip({ 'manifest.json': '{"x":1}', 'finger_robot.signed.bin': image }),
      zip({ 'manifest.json': MANIFEST }),
      zip({ 'manifest.json': 'nope', 'finger_robot.signed.bin': image }),
    ]) {
      expect(() => readFirmwarePackage(bad)).toThrow(/Not a fingerbot firmware package/);
    }
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
