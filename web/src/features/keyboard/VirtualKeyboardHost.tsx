import { lazy, Suspense } from 'react';
import { useKeyboardMode } from './use-keyboard-mode';

// House style: the keyboard and its layouts load only when it is first shown.
const VirtualKeyboard = lazy(() => import('./VirtualKeyboard'));

/**
 * Where MainLayout puts the virtual keyboard: between the remote screen and the status bar, so
 * the docked mode sits below the video; the floating mode draws over it through a portal.
 */
export function VirtualKeyboardHost() {
  const mode = useKeyboardMode();
  if (mode === 'closed') return null;
  return (
    <Suspense fallback={null}>
      <VirtualKeyboard mode={mode} />
    </Suspense>
  );
}
