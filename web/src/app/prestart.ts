/**
 * The first frame without the waterfall (issue 28 item 2): on the console's own routes the
 * login check starts beside the init check (not after it and the first render), and once it
 * has said yes the video client starts (features/video prestartVideo) and then the main page's
 * chunks load together instead of one after the other, and render while ICE and DTLS run.
 * Measured by `npm run bench -- video` (`ttff_*_parts`, docs/webrtc.md "First frame").
 */
import { stripBase } from '../lib/base';
import { normalizePath } from '../lib/path';
import { preload } from '../lib/preload';
import { fetchConsoleChunks } from './console-chunks';
import { getAuthToken } from '../lib/storage';
import { checkLogin } from '../features/session/session-actions';
import { useSession } from '../features/session/session-store';
import { prefetchVideo } from '../features/video/video-prefetch';
import { TOKEN_QUERY_PARAM } from './guard';

/** What prestart calls of features/video/video-session (a chunk of its own). */
interface VideoSessionModule {
  prestartVideo: () => Promise<void>;
}

/** The routes whose page shows the remote screen (router.tsx). */
const CONSOLE_PATHS = ['/', '/kvm'];

/**
 * Starts the console's loads and its video (see above). The promise settles once the video's
 * client has been started (WebRTC: answered and its first frame shown, features/video
 * prestartVideo) after a stored token's config came, at once without a stored token: main.tsx
 * renders the first screen after it, so React's first render does not hold the video back.
 */
export function prestartConsole(
  pathname: string = window.location.pathname,
  search: string = window.location.search,
): Promise<void> {
  if (!CONSOLE_PATHS.includes(normalizePath(stripBase(pathname)))) return Promise.resolve();
  // The guard's own check (SPEC 2) joins this one (one at a time); a token in the query is the
  // guard's to store first.
  const tokenInQuery = new URLSearchParams(search).has(TOKEN_QUERY_PARAM);
  if (!tokenInQuery) void checkLogin(null);
  // A stored token is most likely good: the video's loads start beside the login check, not
  // after it (a refused token leaves them unused), and the video starts once the config has
  // come (it needs the login too): before the login check's answer makes React render the
  // console.
  let session: Promise<VideoSessionModule> | null = null;
  /** The video's start, once (whichever path comes first starts it). */
  let started: Promise<void> | undefined;
  const startVideo = (): Promise<void> | undefined => {
    if (started || !session) return started;
    // offline: the page's own start tries again. The console's chunks come after the video's
    // start: evaluated beside it they held its answers back (docs/webrtc.md "First frame").
    // The router's module comes after this too (main.tsx): the chunks are fetched at once, and
    // its preload of them, when it comes, finds them in.
    started = session
      .then((m) => m.prestartVideo())
      .catch(() => undefined)
      .finally(() => {
        fetchConsoleChunks();
        preload('console');
      });
    return started;
  };
  /** The loads, once: the config's answer (it proves the login good). */
  let config: Promise<unknown> | null = null;
  const load = (): Promise<unknown> => {
    if (config) return config;
    config = prefetchVideo();
    session = import('../features/video/video-session');
    return config;
  };
  // a config refused (no login) starts nothing here: the login check decides
  const early =
    !tokenInQuery && getAuthToken() !== null
      ? load().then(startVideo, () => undefined)
      : Promise.resolve();
  const begin = (): boolean => {
    const { isLoggedIn } = useSession.getState();
    if (isLoggedIn === null) return false;
    if (isLoggedIn) {
      void load();
      startVideo();
    }
    return true;
  };
  if (!begin()) {
    const off = useSession.subscribe(() => {
      if (begin()) off();
    });
  }
  return early;
}
