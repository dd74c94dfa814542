/**
 * The testbed's test radio: a simulated Wi-Fi client (these machines have no radio and no
 * mac80211_hwsim, architecture.md). It says so (`adapter: 'test-radio'`), never touches a real
 * interface, and behaves like a radio in time: a scan takes about a second, a join moves
 * state 1 (connecting) → 2 (connected) or 3 (failed) after about a second. Saved networks are
 * kept in `<data_dir>/system/test-radio.json`. docs/system.md "Wi-Fi" lists its networks.
 */
import { join } from 'node:path';
import type { WifiNetwork, WifiStatus } from '@kvm/protocol';
import { BadRequestError } from '../../errors';
import { JsonFile } from '../../storage/json-store';
import type { Availability } from '../types';
import type { WifiConnectOutcome, WifiConnectRequest, WifiDriver } from './types';

export const TEST_RADIO_LABEL = 'Test radio (simulated)';

/** The Wi-Fi is switched off (`enable?enable=false`). */
export class WifiDisabledError extends BadRequestError {
  static override readonly defaultMessage = 'Wi-Fi is disabled';
}

interface SimulatedNetwork extends Omit<WifiNetwork, 'saved' | 'connected'> {
  /** The key that joins it; null: open. */
  key: string | null;
  /** Association never succeeds (out of range by the time it is joined). */
  broken?: boolean;
}

/** The networks in the air around the test radio. */
export const TEST_RADIO_NETWORKS: readonly SimulatedNetwork[] = [
  {
    ssid: 'KVM-Lab',
    bssid: '02:4b:56:4d:00:01',
    channel: 6,
    signal: -48,
    quality: 88,
    secure: true,
    encryption: 'wpa2-psk',
    key: 'kvm-lab-pass',
  },
  {
    ssid: 'KVM-Guest',
    bssid: '02:4b:56:4d:00:02',
    channel: 11,
    signal: -61,
    quality: 68,
    secure: false,
    encryption: 'none',
    key: null,
  },
  {
    ssid: 'Office-5G',
    bssid: '02:4b:56:4d:00:03',
    channel: 36,
    signal: -67,
    quality: 58,
    secure: true,
    encryption: 'wpa3-sae',
    key: 'office-5g-pass',
  },
  {
    // A weaker second access point of the same network: a scan shows the strongest only.
    ssid: 'Office-5G',
    bssid: '02:4b:56:4d:00:13',
    channel: 149,
    signal: -78,
    quality: 40,
    secure: true,
    encryption: 'wpa3-sae',
    key: 'office-5g-pass',
  },
  {
    ssid: 'KVM-Broken',
    bssid: '02:4b:56:4d:00:04',
    channel: 1,
    signal: -83,
    quality: 30,
    secure: false,
    encryption: 'none',
    key: null,
    broken: true,
  },
];

/** The test subnet the radio "joins" (never configured anywhere). */
const TEST_SUBNET = { ip: '192.168.50.123', gateway: '192.168.50.1', dns: ['192.168.50.1'] };

interface SavedNetwork {
  ssid: string;
  encryption: string;
  key: string | null;
}

interface RadioFile {
  enabled: boolean;
  saved: SavedNetwork[];
}

function parseRadioFile(raw: unknown): RadioFile {
  if (raw === undefined) return { enabled: true, saved: [] };
  const r = raw as Partial<RadioFile> | null;
  const saved = Array.isArray(r?.saved)
    ? r.saved.filter(
        (s): s is SavedNetwork =>
          typeof s?.ssid === 'string' &&
          typeof s.encryption === 'string' &&
          (s.key === null || typeof s.key === 'string'),
      )
    : [];
  return { enabled: r?.enabled !== false, saved: saved.slice(0, 64) };
}

export class TestRadioWifi implements WifiDriver {
  readonly name = 'test-radio';
  readonly adapter = 'test-radio' as const;
  private readonly file: JsonFile<RadioFile>;
  private data: RadioFile = { enabled: true, saved: [] };
  private state: WifiStatus['state'] = 0;
  private current: SimulatedNetwork | null = null;
  private failType: WifiStatus['fail_type'] = null;
  /** Bumped by every connect/disconnect so a superseded join does not land. */
  private generation = 0;
  private readonly listeners = new Set<() => void>();
  /** Waits in progress; dispose ends them at once. */
  private readonly timers = new Map<NodeJS.Timeout, () => void>();

  constructor(
    dataDir: string,
    private readonly delayMs = 1000,
  ) {
    this.file = new JsonFile(join(dataDir, 'system', 'test-radio.json'), parseRadioFile, {
      maxBytes: 64 * 1024,
    });
  }

  async init(): Promise<void> {
    this.data = await this.file.load().catch(() => ({ enabled: true, saved: [] }));
  }

  async dispose(): Promise<void> {
    this.generation++;
    for (const [t, resolve] of this.timers) {
      clearTimeout(t);
      resolve();
    }
    this.timers.clear();
  }

  availability(): Availability {
    return { available: true, reason: null };
  }

  async status(): Promise<WifiStatus> {
    const net = this.current;
    const connected = this.state === 2 && net !== null;
    return {
      state: this.state,
      ssid: net?.ssid ?? '',
      bssid: net?.bssid ?? '',
      channel: net?.channel ?? 0,
      signal: net?.signal ?? 0,
      fail_type: this.failType,
      ipv4: connected
        ? { ip: TEST_SUBNET.ip, dns: [...TEST_SUBNET.dns], gateway: TEST_SUBNET.gateway }
        : { ip: '', dns: [], gateway: '' },
      enabled: this.data.enabled,
      adapter: 'test-radio',
      adapter_label: TEST_RADIO_LABEL,
    };
  }

  async scan(): Promise<Omit<WifiNetwork, 'saved' | 'connected'>[]> {
    this.requireEnabled();
    await this.wait();
    this.requireEnabled();
    return TEST_RADIO_NETWORKS.map(({ key: _key, broken: _broken, ...visible }) => ({
      ...visible,
    }));
  }

  async saved(): Promise<{ ssid: string; encryption: string }[]> {
    return this.data.saved.map(({ ssid, encryption }) => ({ ssid, encryption }));
  }

  async connect(request: WifiConnectRequest): Promise<WifiConnectOutcome> {
    this.requireEnabled();
    const generation = ++this.generation;
    const candidates = TEST_RADIO_NETWORKS.filter(
      (n) => n.ssid === request.ssid && (!request.bssid || n.bssid === request.bssid.toLowerCase()),
    ).sort((a, b) => b.signal - a.signal);
    const net = candidates[0] ?? null;
    const savedKey = this.data.saved.find((s) => s.ssid === request.ssid)?.key ?? null;
    const key = request.key ?? savedKey;
    this.state = 1;
    this.failType = null;
    this.current = net ?? null;
    this.emit();
    await this.wait();
    if (generation !== this.generation) {
      return { ok: false, fail_type: null, message: 'Superseded by another Wi-Fi change' };
    }
    let outcome: WifiConnectOutcome;
    if (!net || net.broken) {
      outcome = {
        ok: false,
        fail_type: 'not-found',
        message: `${request.ssid}: no answer from the access point`,
      };
    } else if (net.key !== null && key !== net.key) {
      outcome = { ok: false, fail_type: 'key', message: `${request.ssid}: wrong key` };
    } else {
      outcome = { ok: true, fail_type: null, message: `connected to ${net.ssid}` };
    }
    if (outcome.ok) {
      this.state = 2;
      if (request.remember !== false) {
        await this.save(net!, net!.key === null ? null : key);
      }
    } else {
      this.state = 3;
      this.failType = outcome.fail_type;
    }
    this.emit();
    return outcome;
  }

  async disconnect(): Promise<void> {
    this.generation++;
    this.state = 0;
    this.current = null;
    this.failType = null;
    this.emit();
  }

  async setEnabled(enabled: boolean): Promise<void> {
    if (!enabled) await this.disconnect();
    if (this.data.enabled === enabled) return;
    this.data = { ...this.data, enabled };
    await this.file.save(this.data);
    this.emit();
  }

  async forget(ssid: string): Promise<boolean> {
    const before = this.data.saved.length;
    const saved = this.data.saved.filter((s) => s.ssid !== ssid);
    if (saved.length === before) return false;
    this.data = { ...this.data, saved };
    await this.file.save(this.data);
    if (this.current?.ssid === ssid) await this.disconnect();
    return true;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async save(net: SimulatedNetwork, key: string | null): Promise<void> {
    const saved = this.data.saved.filter((s) => s.ssid !== net.ssid);
    saved.unshift({ ssid: net.ssid, encryption: net.encryption, key });
    this.data = { ...this.data, saved };
    await this.file.save(this.data);
  }

  private requireEnabled(): void {
    if (!this.data.enabled) throw new WifiDisabledError();
  }

  private wait(): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, this.delayMs);
      this.timers.set(t, resolve);
    });
  }

  private emit(): void {
    for (const listener of this.listeners) listener();
  }
}
