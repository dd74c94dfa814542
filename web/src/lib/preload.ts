/**
 * Page chunks a feature may ask to have loaded ahead of navigation, registered by the router
 * (app/), so a feature never imports another feature's page. The upgrade flow preloads
 * /upgrading: after `start` the device restarts within a second and may not serve the old
 * chunk any more. A name asked for before the router has registered it (the router's module
 * loads after the video's start, main.tsx) loads as soon as it is registered.
 */
const loaders = new Map<string, () => Promise<unknown>>();
const wanted = new Set<string>();

function start(loader: () => Promise<unknown>): void {
  void loader().catch(() => undefined);
}

export function registerPreload(name: string, loader: () => Promise<unknown>): void {
  loaders.set(name, loader);
  if (wanted.delete(name)) start(loader);
}

/** Starts loading `name`'s chunk; a failure is ignored (navigation loads it again). */
export function preload(name: string): void {
  const loader = loaders.get(name);
  if (loader) start(loader);
  else wanted.add(name);
}
