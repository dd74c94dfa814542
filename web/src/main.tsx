import { prestartConsole } from './app/prestart';
import { checkInit } from './features/session/session-actions';
import { usePreferences } from './features/preferences/preferences-store';
import { i18n, initI18n } from './i18n';
import { getEmbed } from './lib/embed';
import './app/global.css';

// The entry is small on purpose: what it imports is fetched and evaluated before the first line
// below runs, and the page's first requests wait for that (on a CPU half as fast the old entry,
// React and antd included, held them 470 ms). React, the router and antd come in app/render.
initI18n(usePreferences.getState().language);
// SPEC 1: the host of an embedded console may send settings at any time.
getEmbed().listen();
// SPEC 2: the init check starts before the first render; the guard waits for it.
void checkInit();
// Issue 28: on the console's routes the video starts as soon as the login is known good.
const videoFirst = prestartConsole();

const container = document.getElementById('root');
if (!container) throw new Error('#root is missing from index.html');
// Issue 28 item 2 (docs/webrtc.md "First frame"): the console's React tree loads and renders
// after the video's start (with a stored token; at most FIRST_RENDER_WAIT_MS), so its
// evaluation and first render do not run inside the video's handshake. The first frame shows in
// a preview before the console renders (first-frame-preview.ts).
const FIRST_RENDER_WAIT_MS = 600;
/** A React tree that could not be fetched (the device restarting, the network gone) is asked
 * for again this often, with the reason on the page meanwhile. */
const RENDER_RETRY_MS = 2_000;
function loadConsole(root: HTMLElement): void {
  import('./app/render').then(
    (m) => {
      root.textContent = '';
      m.renderConsole(root);
    },
    () => {
      root.textContent = i18n.t('common.connectionLostWithTip');
      setTimeout(() => loadConsole(root), RENDER_RETRY_MS);
    },
  );
}
void Promise.race([videoFirst, new Promise((r) => setTimeout(r, FIRST_RENDER_WAIT_MS))]).then(() =>
  loadConsole(container),
);
