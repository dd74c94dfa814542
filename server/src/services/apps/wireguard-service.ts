/**
 * The WireGuard app's calls (issue 27, docs/api.md "WireGuard"): GL's `/api/tailscale/*`
 * pattern over the driver. A configuration is read (text, JSON or an uploaded file), bounded,
 * parsed and checked before anything changes: a refused one saves nothing and leaves the
 * running tunnel as it was.
 */
import type { WgPublicConfig, WgStatus } from '@kvm/protocol/wireguard';
import { WG_CONFIG_MAX_BYTES, WgConfigError } from '@kvm/protocol/wireguard';
import { InternalError, PayloadTooLargeError, ValidatorError } from '../../errors';
import { type WireguardControl, WireguardTunnelError } from '../../drivers/apps/types';
import type { AppsService } from './apps-service';

/** 400: the configuration cannot be used; `line` and `field` say where (never a key). */
export class WireguardConfigInvalidError extends ValidatorError {}

/** 400: start without a saved configuration. */
export class WireguardNotConfiguredError extends ValidatorError {
  static override readonly defaultMessage = 'No WireGuard configuration is saved';
}

/** 500: a step of bringing the tunnel up failed (what was done is undone; the LAN untouched). */
export class WireguardTunnelFailedError extends InternalError {}

/** `{success, running}` as GL's tailscale calls answer. */
export interface WgActionResult {
  success: boolean;
  running: boolean;
}

export class WireguardService {
  constructor(private readonly driver: WireguardControl) {}

  /** The WireGuard driver of the apps center, or null when this device has none. */
  static of(apps: AppsService): WireguardService | null {
    const d = apps.get('wireguard');
    return d ? new WireguardService(d as WireguardControl) : null;
  }

  status(): Promise<WgStatus> {
    return this.driver.status();
  }

  config(): WgPublicConfig | null {
    return this.driver.publicConfig();
  }

  /** Checks `text` whole, then saves it (and brings a running tunnel over to it). */
  async setConfig(text: string): Promise<WgPublicConfig> {
    if (Buffer.byteLength(text, 'utf8') > WG_CONFIG_MAX_BYTES) {
      throw new PayloadTooLargeError(
        `The configuration is larger than ${WG_CONFIG_MAX_BYTES} bytes`,
      );
    }
    let parsed;
    try {
      parsed = this.driver.parse(text);
      const problem = await this.driver.routeProblem(parsed);
      if (problem) throw problem;
    } catch (err) {
      if (err instanceof WgConfigError) {
        throw new WireguardConfigInvalidError(err.message, { line: err.line, field: err.field });
      }
      throw err;
    }
    await this.tunnel(() => this.driver.setConfig(text, parsed));
    const saved = this.driver.publicConfig();
    if (!saved) throw new InternalError('The configuration was not kept');
    return saved;
  }

  async start(): Promise<WgActionResult> {
    if (!this.driver.configured) throw new WireguardNotConfiguredError();
    await this.tunnel(() => this.driver.start());
    return { success: true, running: this.driver.running };
  }

  async stop(): Promise<WgActionResult> {
    await this.driver.stop();
    return { success: true, running: this.driver.running };
  }

  async logout(): Promise<WgActionResult> {
    await this.driver.logout();
    return { success: true, running: false };
  }

  private async tunnel(fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      if (err instanceof WireguardTunnelError) throw new WireguardTunnelFailedError(err.message);
      throw err;
    }
  }
}
