/**
 * The console page's three chunks. router.tsx renders them (preloadedLazy); prestart.ts asks
 * for them as soon as the video has started, beside the React tree's own chunks (main.tsx), so
 * that they are not fetched only once the router's module has been evaluated.
 */
export const loadShell = () => import('../features/connection/ProtectedShell');
export const loadLayout = () => import('../features/main/MainLayout');
export const loadPage = () => import('../features/main/MainPage');

/** Fetches and evaluates the three; a failure is ignored (the router loads them again). */
export function fetchConsoleChunks(): void {
  void Promise.all([loadShell(), loadLayout(), loadPage()]).catch(() => undefined);
}
