import { StrictMode, startTransition } from 'react';
import { createRoot } from 'react-dom/client';
import { AppRoot } from './app/App';
import { prestartConsole } from './app/prestart';
import { checkInit } from './features/session/session-actions';
import { usePreferences } from './features/preferences/preferences-store';
import { initI18n } from './i18n';
import { getEmbed } from './lib/embed';
import './app/global.css';

initI18n(usePreferences.getState().language);
// SPEC 1: the host of an embedded console may send settings at any time.
getEmbed().listen();
// SPEC 2: the init check starts before the first render; the guard waits for it.
void checkInit();
// Issue 28: on the console's routes the video starts as soon as the login is known good.
const videoFirst = prestartConsole();

const container = document.getElementById('root');
if (!container) throw new Error('#root is missing from index.html');
// Issue 28 item 2 (docs/webrtc.md "First frame"): the first render waits for the video's start
// (with a stored token; at most FIRST_RENDER_WAIT_MS), and is a transition: React renders the
// first screen in slices and yields between them, so the video's handshake runs meanwhile.
// The first frame shows in a preview before the console renders (first-frame-preview.ts).
const FIRST_RENDER_WAIT_MS = 600;
const root = createRoot(container);
void Promise.race([videoFirst, new Promise((r) => setTimeout(r, FIRST_RENDER_WAIT_MS))]).then(() =>
  startTransition(() =>
    root.render(
      <StrictMode>
        <AppRoot />
      </StrictMode>,
    ),
  ),
);
