/**
 * The console's React tree: react-dom, the router, antd and the pages' shell. main.tsx imports
 * this module only once the video has started (or after its wait), so that evaluating it does
 * not hold back the page's first requests and the video's handshake (issue 28, docs/webrtc.md
 * "First frame").
 */
import { StrictMode, startTransition } from 'react';
import { createRoot } from 'react-dom/client';
import { AppRoot } from './App';

/** Renders the console into `container`, as a transition (React yields between slices). */
export function renderConsole(container: HTMLElement): void {
  const root = createRoot(container);
  startTransition(() =>
    root.render(
      <StrictMode>
        <AppRoot />
      </StrictMode>,
    ),
  );
}
