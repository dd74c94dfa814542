/**
 * The first frame without the waterfall (issue 28 item 2): on the console's own routes the
 * login check starts beside the init check (not after it and the first render), and once it
 * has said yes the main page's chunks load together instead of one after the
 * other, and the video client starts (features/video prestartVideo) while they load and render.
 * Measured by `npm run bench -- video` (`ttff_*_parts`, docs/webrtc.md "First frame").
 */
import { stripBase } from '../lib/base';
import { normalizePath } from '../lib/path';
import { preload } from '../lib/preload';
import { checkLogin } from '../features/session/session-actions';
import { useSession } from '../features/session/session-store';
import { TOKEN_QUERY_PARAM } from './guard';

/** The routes whose page shows the remote screen (router.tsx). */
const CONSOLE_PATHS = ['/', '/kvm'];

export function prestartConsole(
  pathname: string = window.location.pathname,
  search: string = window.location.search,
): void {
  if (!CONSOLE_PATHS.includes(normalizePath(stripBase(pathname)))) return;
  // The guard's own check (SPEC 2) joins this one (one at a time); a token in the query is the
  // guard's to store first.
  if (!new URLSearchParams(search).has(TOKEN_QUERY_PARAM)) void checkLogin(null);
  const begin = (): boolean => {
    const { isLoggedIn } = useSession.getState();
    if (isLoggedIn === null) return false;
    if (isLoggedIn) {
      preload('console');
      void import('../features/video/video-session')
        .then((m) => m.prestartVideo())
        .catch(() => undefined); // offline: the page's own start tries again
    }
    return true;
  };
  if (begin()) return;
  const off = useSession.subscribe(() => {
    if (begin()) off();
  });
}
