/**
 * The device's side of a fleet binding (docs/cloud.md "Binding"): `<data>/cloud.json`, mode
 * 0600, written atomically (storage/json-store.ts). It holds the device secret: never logged,
 * never in an API answer (`CloudService.status()` builds the answer from the other fields).
 */
import { join } from 'node:path';
import type { Logger } from '../../log';
import { JsonFile } from '../../storage/json-store';

export interface CloudAccount {
  username: string;
  email: string;
}

export interface CloudFileState {
  version: 1;
  /** The admin's switch (SPEC's enabled/disabled); nothing leaves the device while false. */
  enabled: boolean;
  /** The fleet's base URL, `https://host[:port]`. */
  url: string | null;
  /** SHA-256 fingerprint (hex, colon-separated) of the certificate accepted for `url`. */
  pinned: string | null;
  /** That certificate (PEM): the only trust anchor of every fleet connection while pinned. */
  pinned_cert: string | null;
  device_id: string | null;
  /** The per-device secret the fleet gave at binding (base64url). */
  secret: string | null;
  account: CloudAccount | null;
  bound_at: number | null;
  /** The replicas' agent URLs (`wss://.../cloud-basic/v1/agent`). */
  endpoints: string[];
}

export function emptyCloudState(enabled = false, url: string | null = null): CloudFileState {
  return {
    version: 1,
    enabled,
    url,
    pinned: null,
    pinned_cert: null,
    device_id: null,
    secret: null,
    account: null,
    bound_at: null,
    endpoints: [],
  };
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** What a file holds, field by field; anything else is dropped (a binding needs all its parts). */
export function parseCloudState(raw: unknown, defaults: CloudFileState): CloudFileState {
  if (raw === undefined) return defaults;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new Error('not an object');
  }
  const r = raw as Record<string, unknown>;
  const acc = r['account'] as Record<string, unknown> | null | undefined;
  const account =
    acc && typeof acc === 'object' && typeof acc['username'] === 'string'
      ? { username: acc['username'], email: typeof acc['email'] === 'string' ? acc['email'] : '' }
      : null;
  const endpoints = Array.isArray(r['endpoints'])
    ? r['endpoints'].filter((e): e is string => typeof e === 'string' && /^wss:\/\//.test(e))
    : [];
  const deviceId = str(r['device_id']);
  const secret = str(r['secret']);
  const bound = deviceId !== null && secret !== null && account !== null;
  const url = str(r['url']);
  const pinned = str(r['pinned']);
  const pinnedCert = str(r['pinned_cert']);
  return {
    version: 1,
    enabled: r['enabled'] === true,
    url: url !== null && /^https:\/\//.test(url) ? url : null,
    pinned: pinned !== null && pinnedCert !== null ? pinned : null,
    pinned_cert: pinned !== null && pinnedCert !== null ? pinnedCert : null,
    device_id: bound ? deviceId : null,
    secret: bound ? secret : null,
    account: bound ? account : null,
    bound_at: bound && typeof r['bound_at'] === 'number' ? r['bound_at'] : null,
    endpoints: bound ? endpoints : [],
  };
}

/** `cloud.json`: read once, every change written through before it counts. */
export class BindingStore {
  private constructor(
    private readonly file: JsonFile<CloudFileState>,
    private current: CloudFileState,
  ) {}

  static async open(
    dataDir: string,
    defaults: { enabled: boolean; url: string | null },
    log: Logger,
  ): Promise<BindingStore> {
    const base = emptyCloudState(defaults.enabled, defaults.url);
    const file = new JsonFile<CloudFileState>(join(dataDir, 'cloud.json'), (raw) =>
      parseCloudState(raw, base),
    );
    const state = await file.loadOrDefaults(() => base, log, 'cloud binding');
    return new BindingStore(file, state);
  }

  get(): Readonly<CloudFileState> {
    return this.current;
  }

  bound(): boolean {
    return this.current.secret !== null && this.current.device_id !== null;
  }

  /** Applies a change: the file first, then memory (a failed write changes nothing). */
  async update(patch: Partial<Omit<CloudFileState, 'version'>>): Promise<CloudFileState> {
    const next: CloudFileState = { ...this.current, ...patch, version: 1 };
    await this.file.save(next);
    this.current = next;
    return next;
  }

  /** Forgets the binding (secret, id, account, endpoints); the URL, pin and switch stay. */
  forget(): Promise<CloudFileState> {
    return this.update({
      device_id: null,
      secret: null,
      account: null,
      bound_at: null,
      endpoints: [],
    });
  }
}
