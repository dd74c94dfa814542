import { useFullscreen, useViewport } from '../../components/hooks';
import {
  effectiveKeyboardMode,
  useVirtualKeyboard,
  type KeyboardMode,
} from './virtual-keyboard-store';

/** The mode the virtual keyboard shows in now (SPEC 2 forced-floating rule). */
export function useKeyboardMode(): KeyboardMode {
  const chosen = useVirtualKeyboard((s) => s.chosen);
  const adding = useVirtualKeyboard((s) => s.adding);
  const fullscreen = useFullscreen();
  // Debounced by 300 ms (SPEC 9), so a window drag does not flip the keyboard back and forth.
  const { height } = useViewport();
  return effectiveKeyboardMode({ chosen, adding, fullscreen, viewportHeight: height });
}
