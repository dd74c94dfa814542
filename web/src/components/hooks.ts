import { useSyncExternalStore } from 'react';
import { getEmbed, type EmbedSnapshot } from '../lib/embed';
import { isFullscreen, subscribeFullscreen } from '../lib/fullscreen';
import { getViewportStore, type Viewport } from '../lib/viewport';

/** SPEC 9 layout flags, debounced by 300 ms. */
export function useViewport(): Viewport {
  const store = getViewportStore();
  return useSyncExternalStore(store.subscribe, store.getSnapshot);
}

export function useEmbed(): EmbedSnapshot {
  const embed = getEmbed();
  return useSyncExternalStore(embed.subscribe, embed.getSnapshot);
}

export function useFullscreen(): boolean {
  return useSyncExternalStore(
    (listener) => subscribeFullscreen(listener),
    () => isFullscreen(),
  );
}
