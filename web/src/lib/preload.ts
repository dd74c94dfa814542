/**
 * Page chunks a feature may ask to have loaded ahead of navigation, registered by the router
 * (app/), so a feature never imports another feature's page. The upgrade flow preloads
 * /upgrading: after `start` the device restarts within a second and may not serve the old
 * chunk any more.
 */
const loaders = new Map<string, () => Promise<unknown>>();

export function registerPreload(name: string, loader: () => Promise<unknown>): void {
  loaders.set(name, loader);
}

/** Starts loading `name`'s chunk; a failure is ignored (navigation loads it again). */
export function preload(name: string): void {
  void loaders
    .get(name)?.()
    .catch(() => undefined);
}
