import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SILENT_LOGGER } from '../../log';
import { SafeChanges } from '../../services/system/safe-change';
import { parseWifiJoin } from '../../services/system/wifi-input';
import { WifiService } from '../../services/system/wifi-service';
import { DisabledWifi } from './disabled';
import { TestRadioWifi } from './test-radio';

let dataDir: string;
const radios: TestRadioWifi[] = [];
const safes: SafeChanges[] = [];
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'kvm-radio-'));
});
afterEach(async () => {
  for (const r of radios.splice(0)) await r.dispose();
  for (const s of safes.splice(0)) s.dispose();
  await rm(dataDir, { recursive: true, force: true });
});

async function radio(delayMs = 20): Promise<TestRadioWifi> {
  const r = new TestRadioWifi(dataDir, delayMs);
  radios.push(r);
  await r.init();
  return r;
}

describe('the test radio', () => {
  it('moves 1 → 2 on a good key, 1 → 3 on a wrong one, and says it is simulated', async () => {
    const r = await radio(200);
    const status = await r.status();
    expect(status).toMatchObject({
      adapter: 'test-radio',
      adapter_label: 'Test radio (simulated)',
    });
    const joining = r.connect({ ssid: 'Office-5G', key: 'office-5g-pass' });
    await vi.waitFor(async () => expect((await r.status()).state).toBe(1));
    expect(await joining).toMatchObject({ ok: true });
    expect(await r.status()).toMatchObject({
      state: 2,
      ssid: 'Office-5G',
      channel: 36,
      signal: -67,
    });
    expect(await r.connect({ ssid: 'Office-5G', key: 'nope-nope' })).toMatchObject({
      ok: false,
      fail_type: 'key',
    });
    expect(await r.status()).toMatchObject({ state: 3, fail_type: 'key', ipv4: { ip: '' } });
  });

  it('KVM-Broken always fails with not-found after about a second', async () => {
    const r = await radio(1000);
    const t0 = Date.now();
    expect(await r.connect({ ssid: 'KVM-Broken' })).toMatchObject({
      ok: false,
      fail_type: 'not-found',
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
  });

  it('keeps saved networks and the switch in the data folder', async () => {
    const r = await radio();
    await r.connect({ ssid: 'KVM-Lab', key: 'kvm-lab-pass' });
    await r.connect({ ssid: 'KVM-Guest', remember: false });
    await r.setEnabled(false);
    const again = await radio();
    expect(await again.saved()).toEqual([{ ssid: 'KVM-Lab', encryption: 'wpa2-psk' }]);
    expect((await again.status()).enabled).toBe(false);
    await expect(again.scan()).rejects.toThrow('Wi-Fi is disabled');
    expect(await again.forget('KVM-Lab')).toBe(true);
    expect(await again.forget('KVM-Lab')).toBe(false);
  });
});

describe('a Wi-Fi switch made over the Wi-Fi itself', () => {
  it('is pending, and goes back to the previous network when not confirmed', async () => {
    const r = await radio(10);
    // A one-second window (the service's 60 s is checked with fake timers in network-service.test).
    const safe = new SafeChanges({
      pendingPath: join(dataDir, 'system', 'network.pending.json'),
      timeoutS: 1,
      log: SILENT_LOGGER,
    });
    safes.push(safe);
    const wifi = new WifiService(r, safe, SILENT_LOGGER);
    await wifi.scan();
    expect((await wifi.connect({ ssid: 'KVM-Lab', key: 'kvm-lab-pass' })).pending).toBeNull();
    // The console now reaches the device at its Wi-Fi address.
    const answer = await wifi.connect({ ssid: 'KVM-Guest' }, '::ffff:192.168.50.123');
    expect(answer).toMatchObject({ result: 'success', pending: { kind: 'wifi', timeout_s: 1 } });
    expect((await r.status()).ssid).toBe('KVM-Guest');
    await vi.waitFor(
      async () => expect(await r.status()).toMatchObject({ state: 2, ssid: 'KVM-Lab' }),
      {
        timeout: 3000,
      },
    );
    await vi.waitFor(() => expect(safe.pending()).toBeNull());
  });

  it('a failed join over the Wi-Fi goes back at once and leaves nothing pending', async () => {
    const r = await radio(10);
    const safe = new SafeChanges({
      pendingPath: join(dataDir, 'system', 'network.pending.json'),
      timeoutS: 60,
      log: SILENT_LOGGER,
    });
    safes.push(safe);
    const wifi = new WifiService(r, safe, SILENT_LOGGER);
    await wifi.scan();
    await wifi.connect({ ssid: 'KVM-Lab', key: 'kvm-lab-pass' });
    const answer = await wifi.connect({ ssid: 'KVM-Broken' }, '192.168.50.123');
    expect(answer).toEqual({ result: 'failed', fail_type: 'not-found', pending: null });
    expect(await r.status()).toMatchObject({ state: 2, ssid: 'KVM-Lab' });
    expect(safe.pending()).toBeNull();
  });
});

describe('no Wi-Fi adapter (qemu)', () => {
  it('says so on scan and join, and answers a status', async () => {
    const safe = new SafeChanges({
      pendingPath: join(dataDir, 'system', 'network.pending.json'),
      timeoutS: 60,
      log: SILENT_LOGGER,
    });
    const wifi = new WifiService(new DisabledWifi(), safe, SILENT_LOGGER);
    await expect(wifi.scan()).rejects.toMatchObject({ status: 400, message: 'No Wi-Fi adapter' });
    await expect(wifi.connect({ ssid: 'KVM-Lab' })).rejects.toMatchObject({
      wireName: 'SystemFeatureUnavailableError',
      message: 'No Wi-Fi adapter',
    });
    expect(() => parseWifiJoin([])).toThrow('Configuration data must be in JSON object format');
    expect(await wifi.status()).toMatchObject({
      adapter: 'none',
      adapter_label: 'No Wi-Fi adapter',
      state: 0,
    });
  });
});
