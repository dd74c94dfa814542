/**
 * Wi-Fi client (GL `/api/repeater/*`, wire-protocol §5.8 and §5.13) in front of the target's
 * WifiDriver: one scan at a time (others share it), one join at a time (ExclusiveRegion), joins
 * only to networks seen or saved (or declared hidden), and a switch made over Wi-Fi itself kept
 * only once confirmed (safe-change.ts). The routes parse and check the SSID, key and flags
 * (wifi-input.ts); this service takes the typed join.
 */
import {
  unmapIpv4,
  wifiAdapterLabelCode,
  type SavedWifiNetwork,
  type WifiConnectResult,
  type WifiNetwork,
  type WifiStatus,
} from '@kvm/protocol';
import { BadRequestError, IsBusyError } from '../../errors';
import type { Logger } from '../../log';
import { SystemFeatureUnavailableError } from '../../drivers/types';
import type { WifiConnectRequest, WifiDriver } from '../../drivers/wifi/types';
import { ExclusiveRegion } from '../../sync/exclusive-region';
import type { SafeChanges } from './safe-change';

/** A join while another runs. */
export class WifiIsBusyError extends IsBusyError {
  static override readonly defaultMessage: string = 'Another Wi-Fi operation is in progress';
}

/** Scans remembered for the "seen" rule; a bound on what one client can make us hold. */
const SCAN_LIST_MAX = 256;

export class WifiService {
  private scanning: Promise<WifiNetwork[]> | null = null;
  /** SSIDs of the last scan. */
  private seen = new Set<string>();
  /** One join at a time: a second one answers 409 at once. */
  private readonly joins = new ExclusiveRegion(() => new WifiIsBusyError());

  constructor(
    readonly driver: WifiDriver,
    private readonly safe: SafeChanges,
    private readonly log: Logger,
  ) {}

  /** The driver's status, with its label's code for the console to translate. */
  async status(): Promise<WifiStatus> {
    const status = await this.driver.status();
    return { ...status, adapter_label_code: wifiAdapterLabelCode(status) };
  }

  /** At most one scan runs; callers meanwhile get its answer. */
  scan(): Promise<WifiNetwork[]> {
    try {
      this.requireAdapter();
    } catch (err) {
      return Promise.reject(err);
    }
    if (!this.scanning) {
      this.scanning = this.doScan().finally(() => {
        this.scanning = null;
      });
    }
    return this.scanning;
  }

  async saved(): Promise<SavedWifiNetwork[]> {
    return this.driver.saved();
  }

  /**
   * `connect` with the join the route parsed (wifi-input.ts `parseWifiJoin`). When the console
   * itself is reached over the Wi-Fi (`localAddress` is the Wi-Fi address), the switch is a safe
   * change: kept only if confirmed.
   */
  async connect(request: WifiConnectRequest, localAddress?: string): Promise<WifiConnectResult> {
    this.requireAdapter();
    const { ssid } = request;
    if (!request.hidden && !this.seen.has(ssid)) {
      const saved = await this.driver.saved();
      if (!saved.some((s) => s.ssid === ssid)) {
        throw new BadRequestError(
          `ssid '${ssid}' was not found by the last scan and is not saved (scan first, or join it as hidden)`,
        );
      }
    }
    return this.joins.enter(async () => {
      const before = await this.driver.status();
      const overWifi =
        localAddress !== undefined &&
        before.ipv4.ip !== '' &&
        unmapIpv4(localAddress) === before.ipv4.ip;
      if (!overWifi) {
        const outcome = await this.safe.exclusive(() => this.driver.connect(request));
        this.log.info({ ssid, ok: outcome.ok, fail_type: outcome.fail_type }, outcome.message);
        return outcome.ok
          ? { result: 'success', fail_type: null, pending: null }
          : { result: 'failed', fail_type: outcome.fail_type, pending: null };
      }
      let outcome = { ok: false, fail_type: null, message: '' } as Awaited<
        ReturnType<WifiDriver['connect']>
      >;
      const previousSsid = before.state === 2 ? before.ssid : null;
      const pending = await this.safe
        .run({
          kind: 'wifi',
          previous: { ssid: previousSsid },
          previous_address: null,
          apply: async () => {
            outcome = await this.driver.connect(request);
            if (!outcome.ok) {
              // A join that failed changes nothing to keep: back to the previous network now.
              await this.restore(previousSsid);
              throw new JoinFailed();
            }
          },
          newAddress: async () => {
            const ip = (await this.driver.status()).ipv4.ip;
            return ip ? `https://${ip}/` : null;
          },
          keep: async () => undefined,
          revert: () => this.restore(previousSsid),
        })
        .catch((err: unknown) => {
          if (err instanceof JoinFailed) return null;
          throw err;
        });
      this.log.info({ ssid, ok: outcome.ok, fail_type: outcome.fail_type }, outcome.message);
      return outcome.ok
        ? { result: 'success', fail_type: null, pending }
        : { result: 'failed', fail_type: outcome.fail_type, pending: null };
    });
  }

  async disconnect(): Promise<void> {
    await this.driver.disconnect();
  }

  async setEnabled(enabled: boolean): Promise<void> {
    await this.driver.setEnabled(enabled);
  }

  /** `remove_saved_ap` with the SSID the route parsed (wifi-input.ts `parseWifiForget`). */
  async forget(ssid: string): Promise<boolean> {
    return this.driver.forget(ssid);
  }

  /** After a restart inside a Wi-Fi switch's window: back to the network it left. */
  async recover(previous: unknown): Promise<void> {
    const ssid = (previous as { ssid?: unknown } | null)?.ssid;
    await this.restore(typeof ssid === 'string' ? ssid : null);
  }

  /** No radio here (qemu): say so before anything else is looked at. */
  private requireAdapter(): void {
    const availability = this.driver.availability();
    if (!availability.available) {
      throw new SystemFeatureUnavailableError(availability.reason ?? 'No Wi-Fi adapter');
    }
  }

  private async restore(ssid: string | null): Promise<void> {
    if (ssid === null) {
      await this.driver.disconnect();
      return;
    }
    const outcome = await this.driver.connect({ ssid, remember: true });
    if (!outcome.ok) throw new Error(`could not rejoin ${ssid}: ${outcome.message}`);
  }

  private async doScan(): Promise<WifiNetwork[]> {
    const [found, saved, status] = await Promise.all([
      this.driver.scan(),
      this.driver.saved(),
      this.driver.status(),
    ]);
    const savedSsids = new Set(saved.map((s) => s.ssid));
    // One entry per SSID: the strongest access point.
    const best = new Map<string, (typeof found)[number]>();
    for (const ap of found) {
      if (!ap.ssid) continue;
      const have = best.get(ap.ssid);
      if (!have || ap.signal > have.signal) best.set(ap.ssid, ap);
    }
    const list = [...best.values()]
      .sort((a, b) => b.signal - a.signal)
      .slice(0, SCAN_LIST_MAX)
      .map((ap) => ({
        ...ap,
        saved: savedSsids.has(ap.ssid),
        connected: status.state === 2 && status.ssid === ap.ssid,
      }));
    this.seen = new Set(list.map((ap) => ap.ssid));
    return list;
  }
}

class JoinFailed extends Error {}
