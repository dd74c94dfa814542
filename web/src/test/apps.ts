/** An app as `GET /api/apps` lists it, for the console's tests. */
import type { AppSummary } from '@kvm/protocol/apps';

const NAMES: Record<AppSummary['id'], string> = {
  tailscale: 'Tailscale',
  netbird: 'NetBird',
  zerotier: 'ZeroTier',
  wireguard: 'WireGuard',
};

/** Installed (version 1.0.0), stopped, no addresses; `patch` changes what a test needs. */
export function appSummary(id: AppSummary['id'], patch: Partial<AppSummary> = {}): AppSummary {
  return {
    id,
    name: NAMES[id],
    installed: true,
    version: '1.0.0',
    running: false,
    state: 'stopped',
    detail: null,
    addresses: [],
    control_url: null,
    rss_bytes: null,
    memory_limit_bytes: null,
    ...patch,
  };
}
