/**
 * Fullscreen with keyboard lock. A plain module over the DOM; React subscribes through
 * useSyncExternalStore.
 */

export function isFullscreen(doc: Document = document): boolean {
  return doc.fullscreenElement !== null && doc.fullscreenElement !== undefined;
}

export function subscribeFullscreen(listener: () => void, doc: Document = document): () => void {
  doc.addEventListener('fullscreenchange', listener);
  return () => doc.removeEventListener('fullscreenchange', listener);
}

interface KeyboardLock {
  lock?: (codes?: string[]) => Promise<void>;
  unlock?: () => void;
}

export async function enterFullscreen(element: HTMLElement = document.documentElement) {
  await element.requestFullscreen();
  // Chromium only (Keyboard Lock API): in fullscreen with the keyboard locked, keys such as Esc,
  // Alt+Tab or Win reach the page (and so the remote computer); the user leaves fullscreen by
  // holding Esc, which is what the hint on entering says. Elsewhere the call is missing: ignore.
  const keyboard = (navigator as Navigator & { keyboard?: KeyboardLock }).keyboard;
  await keyboard?.lock?.().catch(() => undefined);
}

export async function exitFullscreen(doc: Document = document) {
  const keyboard = (navigator as Navigator & { keyboard?: KeyboardLock }).keyboard;
  keyboard?.unlock?.();
  if (isFullscreen(doc)) await doc.exitFullscreen();
}
