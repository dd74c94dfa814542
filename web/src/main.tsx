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
prestartConsole();

const container = document.getElementById('root');
if (!container) throw new Error('#root is missing from index.html');
// A transition: React renders the first screen in slices and yields between them, so the
// video's start (app/prestart.ts) and its handshake's messages run meanwhile (issue 28 item 2).
const root = createRoot(container);
startTransition(() =>
  root.render(
    <StrictMode>
      <AppRoot />
    </StrictMode>,
  ),
);
