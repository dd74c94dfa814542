/**
 * One place on screen for the console's lasting notices (the new-version tip, the video
 * fallback notice, ...): a column at the top right, below the toolbar, where each notice takes
 * its own row, so two notices never cover each other (issue 21 item 17). The host is mounted
 * once in the main layout; a notice rendered without one (a component test) stays in place.
 */
import { createContext, use, useState, type CSSProperties, type ReactNode } from 'react';
import { createPortal } from 'react-dom';

/** undefined: no host (notices stay in place); null: the host's column is not mounted yet. */
const StackContext = createContext<HTMLElement | null | undefined>(undefined);

/** Below the 48 px toolbar, above the remote screen and its panels, under modals (1000). */
export const NOTICE_STACK_STYLE: CSSProperties = {
  position: 'fixed',
  top: 56,
  right: 16,
  zIndex: 999,
  display: 'flex',
  flexDirection: 'column',
  alignItems: 'flex-end',
  gap: 8,
  width: 'max-content',
  maxWidth: 'min(400px, calc(100vw - 32px))',
  // The column itself lets clicks through; each notice takes its own.
  pointerEvents: 'none',
};

export function NoticeStackHost({ children }: { children: ReactNode }) {
  const [element, setElement] = useState<HTMLElement | null>(null);
  return (
    <StackContext value={element}>
      {children}
      <div ref={setElement} data-testid="notice-stack" style={NOTICE_STACK_STYLE} />
    </StackContext>
  );
}

/** A notice in the stack (in place when there is no host). */
export function StackedNotice({ children }: { children: ReactNode }) {
  const host = use(StackContext);
  const content = <div style={{ pointerEvents: 'auto', maxWidth: '100%' }}>{children}</div>;
  if (host === undefined) return content;
  return host ? createPortal(content, host) : null;
}
