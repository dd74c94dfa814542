import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostname } from 'node:os';
import { buildApp, createContext } from '../app';
import { buildConfig } from '../config';
import { loadConfigDefaults } from '../paths';
import { deviceId } from './device-id';

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-device-id-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('deviceId (issue 21: the About dialog showed the host name)', () => {
  it('derives a stable id from the machine id without showing it', async () => {
    const mid = join(dir, 'machine-id');
    await writeFile(mid, '0123456789abcdef0123456789abcdef\n');
    const a = await deviceId(join(dir, 'data1'), { machineIdPaths: [mid] });
    expect(a).toMatch(/^[0-9A-F]{4}(-[0-9A-F]{4}){3}$/);
    // The same machine: the same id, whatever the data folder (a reset, an upgrade).
    expect(await deviceId(join(dir, 'data2'), { machineIdPaths: [mid] })).toBe(a);
    expect(a.replace(/-/g, '').toLowerCase()).not.toContain('0123456789abcdef');
    // Another machine: another id.
    await writeFile(mid, 'fedcba9876543210fedcba9876543210\n');
    expect(await deviceId(join(dir, 'data1'), { machineIdPaths: [mid] })).not.toBe(a);
  });

  it('without a machine id, a random id kept in the data folder', async () => {
    const none = [join(dir, 'missing'), join(dir, 'zeros')];
    await writeFile(none[1]!, '00000000000000000000000000000000\n');
    const data = join(dir, 'data');
    const a = await deviceId(data, { machineIdPaths: none });
    expect(a).toMatch(/^[0-9A-F]{4}(-[0-9A-F]{4}){3}$/);
    expect((await readFile(join(data, 'device-id'), 'utf8')).trim()).toBe(a);
    expect(await deviceId(data, { machineIdPaths: none })).toBe(a);
    expect(await deviceId(join(dir, 'other'), { machineIdPaths: none })).not.toBe(a);
  });

  it('this machine has one (the host name is not it)', async () => {
    const id = await deviceId(dir);
    expect(id).toMatch(/^[0-9A-F]{4}(-[0-9A-F]{4}){3}$/);
  });
});

describe('/api/info product.device_id', () => {
  it('is the device id, not the host name', async () => {
    const config = buildConfig(
      { data_dir: join(dir, 'data'), target: 'testbed', webrtc: { stun_url: null } },
      loadConfigDefaults(),
    );
    const ctx = await createContext(config, '0.1.0');
    const app = await buildApp(ctx);
    try {
      const product = ctx.info.build().system.product;
      expect(product.device_id).toBe(await deviceId(join(dir, 'data')));
      expect(product.device_id).not.toBe(hostname());
    } finally {
      await app.close();
    }
  });
});
